/**
 * Puts vectors computed elsewhere (`train/embed_ids.py embed`) into the user's embedding cache under quarry's
 * embedder id, so that `quarry index` on those trees (`train/embed_trees.sh`) finds every text cached. First it
 * compares the check sample (texts whose vectors quarry made itself) and refuses when they disagree.
 *
 *   node --import tsx train/import_vectors.ts --texts /work/gpu/train --vectors /work/gpu/out/vectors [--min-cos 0.999]
 *
 * Reads TEXTS.hashes, TEXTS.check and VECTORS.0.npy, VECTORS.1.npy, … (float16 or float32 rows, in the hashes' order).
 */
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openUserCache } from '../src/embed/shared-cache.ts';
import { openLocalEmbedder } from './local-embedder.ts';

const { values: args } = parseArgs({
  options: {
    'model-dir': { type: 'string' },
    model: { type: 'string' },
    texts: { type: 'string' },
    vectors: { type: 'string' },
    'min-cos': { type: 'string', default: '0.999' },
    'dry-run': { type: 'boolean', default: false },
  },
});
if (!args.texts || !args.vectors) {
  console.error('usage: import_vectors.ts --texts PREFIX --vectors PREFIX');
  process.exit(2);
}

/** The rows of a 2-D .npy file of float16 or float32, as float32 arrays. */
function readNpy(path: string): Float32Array[] {
  const buf = readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path} is not a .npy file`);
  const major = buf[6]!;
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const shape = /'shape':\s*\((\d+),\s*(\d+)\)/.exec(header);
  if (!shape || /True/.test(/'fortran_order':\s*(\w+)/.exec(header)?.[1] ?? '')) throw new Error(`${path}: ${header}`);
  const [rows, dim] = [Number(shape[1]), Number(shape[2])];
  const out: Float32Array[] = [];
  for (let r = 0; r < rows; r++) {
    const v = new Float32Array(dim);
    for (let d = 0; d < dim; d++) {
      if (descr === '<f2') v[d] = halfToFloat(buf.readUInt16LE(start + (r * dim + d) * 2));
      else if (descr === '<f4') v[d] = buf.readFloatLE(start + (r * dim + d) * 4);
      else throw new Error(`${path}: dtype ${descr}`);
    }
    out.push(v);
  }
  return out;
}

function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  if (e === 0) return s * 2 ** -14 * (f / 1024);
  if (e === 31) return f ? Number.NaN : s * Number.POSITIVE_INFINITY;
  return s * 2 ** (e - 15) * (1 + f / 1024);
}

const hashes = readFileSync(`${args.texts}.hashes`, 'utf8').split('\n').filter(Boolean);
const check = new Set(readFileSync(`${args.texts}.check`, 'utf8').split('\n').filter(Boolean));
const vectors: Float32Array[] = [];
for (let p = 0; existsSync(`${args.vectors}.${p}.npy`); p++) vectors.push(...readNpy(`${args.vectors}.${p}.npy`));
if (vectors.length !== hashes.length)
  throw new Error(`${vectors.length} vectors for ${hashes.length} texts: the files do not belong together`);

const embedder = await openLocalEmbedder(args['model-dir'], args.model);
const cache = openUserCache();
const known = await cache.get(embedder.id, [...check]);
const cosines: number[] = [];
hashes.forEach((h, i) => {
  const mine = known.get(h);
  if (!mine) return;
  const v = vectors[i]!;
  let dot = 0;
  let nv = 0;
  for (let d = 0; d < v.length; d++) {
    dot += v[d]! * mine[d]!;
    nv += v[d]! * v[d]!;
  }
  cosines.push(dot / Math.sqrt(nv));
});
cosines.sort((a, b) => a - b);
const min = cosines[0] ?? Number.NaN;
const mean = cosines.reduce((a, b) => a + b, 0) / cosines.length;
console.error(`check: ${cosines.length} texts, cosine to quarry's own vectors min ${min.toFixed(6)}, mean ${mean.toFixed(6)}`);
if (!(min >= Number(args['min-cos']))) {
  console.error(`refused: the check's cosine is below ${args['min-cos']}`);
  process.exit(1);
}
if (!args['dry-run']) {
  const entries = hashes
    .map((hash, i) => ({ hash, vector: vectors[i]! }))
    .filter((e) => !check.has(e.hash));
  for (let i = 0; i < entries.length; i += 4096) await cache.put(embedder.id, entries.slice(i, i + 4096));
  console.error(`${entries.length} vectors put into the user's cache under ${embedder.id}`);
}
cache.close();
await embedder.close();
