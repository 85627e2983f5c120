/**
 * A stand-in for an embedding model's ONNX file, written here byte by byte (ONNX is protobuf): the inputs and output
 * of a BERT-style encoder (`input_ids`, `attention_mask`, `token_type_ids` → `last_hidden_state` [batch, seq, dim]),
 * with a graph small enough to compute by hand. Token j's output is the sum of the table rows of tokens j…n−1
 * (`CumSum(reverse)` over `Gather(table, id mod rows)`, padding masked out), so the first token's vector reads the
 * whole text and mean pooling weighs tokens by position: every pooling, prefix and truncation choice shows in the
 * result. Used to test each preset's pipeline without its real weights.
 */

export const STANDIN_ROWS = 97;

/** The table row of a token: deterministic values, different for every row and dimension. */
export function standinRow(id: number, dim: number): Float32Array {
  const r = id % STANDIN_ROWS;
  const out = new Float32Array(dim);
  for (let d = 0; d < dim; d++) out[d] = Math.sin(r * 12.9898 + d * 78.233) * 0.5;
  return out;
}

/** What the stand-in computes for one sequence, pooled: `cls` (token 0) or `mean`; L2-normalised. */
export function standinExpected(ids: number[], dim: number, pooling: 'mean' | 'cls'): Float32Array {
  const rows = ids.map((id) => standinRow(id, dim));
  const hidden: Float32Array[] = [];
  const acc = new Float64Array(dim);
  for (let j = ids.length - 1; j >= 0; j--) {
    const row = rows[j] as Float32Array;
    for (let d = 0; d < dim; d++) acc[d] = (acc[d] as number) + (row[d] as number);
    hidden[j] = Float32Array.from(acc);
  }
  const v = new Float64Array(dim);
  if (pooling === 'cls') v.set(hidden[0]!);
  else for (const h of hidden) for (let d = 0; d < dim; d++) v[d]! += h[d]! / ids.length;
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return Float32Array.from(v, (x) => x / norm);
}

// --- protobuf wire format ---
const varint = (n: number | bigint): number[] => {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n;
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    out.push(byte);
  } while (v);
  return out;
};
const key = (field: number, wire: number) => varint((field << 3) | wire);
const int = (field: number, n: number | bigint) => [...key(field, 0), ...varint(n)];
const bytes = (field: number, data: ArrayLike<number>) => [
  ...key(field, 2),
  ...varint(data.length),
  ...Array.from(data),
];
const str = (field: number, s: string) => bytes(field, new TextEncoder().encode(s));
const msg = (field: number, parts: number[][]) => bytes(field, parts.flat());

const FLOAT = 1;
const INT64 = 7;

function tensor(field: number, name: string, type: number, dims: number[], raw: Uint8Array): number[] {
  return msg(field, [...dims.map((d) => int(1, d)), int(2, type), str(8, name), bytes(9, raw)]);
}

function valueInfo(field: number, name: string, type: number, dims: Array<number | string>): number[] {
  const shape = dims.map((d) => msg(1, [typeof d === 'number' ? int(1, d) : str(2, d)]));
  return msg(field, [str(1, name), msg(2, [msg(1, [int(1, type), msg(2, shape)])])]);
}

function node(op: string, inputs: string[], outputs: string[], attrs: number[][] = []): number[] {
  return msg(1, [...inputs.map((i) => str(1, i)), ...outputs.map((o) => str(2, o)), str(4, op), ...attrs]);
}

const intAttr = (name: string, value: number) => msg(5, [str(1, name), int(3, value), int(20, 2)]);

const int64s = (values: number[]) => new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer);

/** The stand-in model's bytes, for vectors of `dim` dimensions. */
export function standinOnnx(dim: number): Uint8Array {
  const table = new Float32Array(STANDIN_ROWS * dim);
  for (let r = 0; r < STANDIN_ROWS; r++) table.set(standinRow(r, dim), r * dim);
  const graph = [
    node('Mod', ['input_ids', 'rows'], ['row_ids']),
    node('Gather', ['table', 'row_ids'], ['rows_out'], [intAttr('axis', 0)]),
    node('Cast', ['attention_mask'], ['mask_f'], [intAttr('to', FLOAT)]),
    node('Unsqueeze', ['mask_f', 'last_axis'], ['mask_3d']),
    node('Mul', ['rows_out', 'mask_3d'], ['masked']),
    node('CumSum', ['masked', 'seq_axis'], ['last_hidden_state'], [intAttr('reverse', 1)]),
    str(2, 'standin'),
    tensor(5, 'rows', INT64, [], int64s([STANDIN_ROWS])),
    tensor(5, 'table', FLOAT, [STANDIN_ROWS, dim], new Uint8Array(table.buffer)),
    tensor(5, 'last_axis', INT64, [1], int64s([2])),
    tensor(5, 'seq_axis', INT64, [], int64s([1])),
    valueInfo(11, 'input_ids', INT64, ['batch', 'seq']),
    valueInfo(11, 'attention_mask', INT64, ['batch', 'seq']),
    valueInfo(12, 'last_hidden_state', FLOAT, ['batch', 'seq', dim]),
  ];
  const model = [int(1, 8), str(2, 'quarry-test'), msg(8, [str(1, ''), int(2, 14)]), msg(7, graph)];
  return Uint8Array.from(model.flat());
}
