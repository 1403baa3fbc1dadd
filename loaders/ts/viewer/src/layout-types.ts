/** Messages between the page and the layout worker. */
export interface LayoutRequest {
  seq: number;
  nodes: { id: string; w: number; h: number; parent: string | null }[];
  /** minW: the width its title needs. */
  clusters: { id: string; parent: string | null; minW?: number }[];
  /** lw, lh: the size of the edge's label (none when absent or 0); skip: not laid out (an elided edge of a fan). */
  edges: { from: string; to: string; lw?: number; lh?: number; skip?: boolean }[];
}
export interface LayoutResult {
  seq: number;
  boxes: Record<string, { x: number; y: number; w: number; h: number }>;
  /** Flat x,y lists, parallel to the request's edges (empty for a skipped edge). */
  edges: number[][];
  /** Centre of each edge's label, parallel to the request's edges; null: not drawn (no label, or another edge's label sits on the shared route). */
  labels: (number[] | null)[];
  width: number;
  height: number;
  ms?: number;
  error?: string;
}
