/** Messages between the page and the layout worker. */
export interface LayoutRequest {
  seq: number;
  nodes: { id: string; w: number; h: number; parent: string | null }[];
  clusters: { id: string; parent: string | null }[];
  edges: { from: string; to: string }[];
}
export interface LayoutResult {
  seq: number;
  boxes: Record<string, { x: number; y: number; w: number; h: number }>;
  /** Flat x,y lists, parallel to the request's edges. */
  edges: number[][];
  width: number;
  height: number;
  ms?: number;
  error?: string;
}
