import { readPt2fFile, schema } from '@pt2format/reader/node';

const file = readPt2fFile(process.argv[2]); // checks header, CRC-32 and structure
const pkg = file.package(); // flatc-generated accessors, zero-copy
for (let p = 0; p < pkg.programsLength(); p++) {
  const program = pkg.programs(p), graph = program.graph();
  for (let i = 0; i < (graph?.nodesLength() ?? 0); i++) console.log('node', graph.nodes(i).target());
  for (let i = 0; i < program.stateLength(); i++) {
    const entry = program.state(i);
    if (entry.kind() !== schema.StateKind.PARAMETER) continue;
    console.log('param', entry.name(), JSON.stringify(file.tensor(entry.tensor()).sizes.map(Number)));
  }
}
