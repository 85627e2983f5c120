// Distils the static tier from the installed weights and reports its time, size and a few nearest neighbours.
//   node --import tsx bench/static-distill.ts
import { statSync } from 'node:fs';
import { findWeights, sha256File } from '../src/embed/models.ts';
import {
  createStaticEmbedder,
  distillStaticTable,
  staticTablePath,
  writeStaticTable,
} from '../src/embed/static.ts';

const weights = findWeights();
if (!weights) throw new Error('no weights: scripts/fetch-test-weights.sh');
const started = performance.now();
let last = 0;
const table = await distillStaticTable(weights, {
  onProgress: (done, total) => {
    if (done - last >= 5000 || done === total) {
      last = done;
      console.error(`${done}/${total} tokens, ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  },
});
const ms = performance.now() - started;
const path = staticTablePath(await sha256File(weights));
writeStaticTable(path, table);
const e = createStaticEmbedder(table);
const texts = Array.from({ length: 2000 }, (_, i) =>
  `export function parseConfig${i}(path: string) {\n  const text = readFileSync(path, 'utf8');\n  return JSON.parse(text) as Settings${i};\n}\n`.repeat(
    3,
  ),
);
const t = performance.now();
await e.embed(texts, 'document');
const perSec = texts.length / ((performance.now() - t) / 1000);
console.log(
  JSON.stringify({
    distillMs: Math.round(ms),
    bytes: statSync(path).size,
    chunksPerSec: Math.round(perSec),
    path,
  }),
);
