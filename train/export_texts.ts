/**
 * Lists what quarry would embed for a set of indexed trees (each file's coarse text and its chunks' texts, exactly as
 * `embedPending` builds them), as the token ids quarry's own tokenizer gives, so that the vectors can be computed on
 * another machine (a lent GPU: `train/embed_ids.py`) and put into the user's embedding cache
 * (`train/import_vectors.ts`). Texts whose vector the cache already holds are left out, except a sample of them
 * (`--check`) that the import compares against the vectors quarry made, to prove the two paths agree.
 *
 *   node --import tsx train/export_texts.ts --out /work/gpu/texts /work/train-data/trees/a /work/train-data/trees/b …
 *
 * Writes OUT.ids (per text: uint16 length, then its uint16 ids), OUT.hashes (one text hash per line, same order) and
 * OUT.check (the hashes of the sample). Each tree must already have a lexical index (`quarry index --no-embed`).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openUserCache } from '../src/embed/shared-cache.ts';
import { chunksToEmbed, chunkText, coarseText, textHash } from '../src/indexing/embedding.ts';
import { openProject } from '../src/project/local/index.ts';
import { openLocalEmbedder } from './local-embedder.ts';

const { values: args, positionals: trees } = parseArgs({
  options: {
    'model-dir': { type: 'string' },
    model: { type: 'string' },
    out: { type: 'string' },
    check: { type: 'string', default: '500' },
  },
  allowPositionals: true,
});
if (!args.out || !trees.length) {
  console.error('usage: export_texts.ts --out PREFIX TREE…');
  process.exit(2);
}
const embedder = await openLocalEmbedder(args['model-dir'], args.model);
const cache = openUserCache();
const seen = new Set<string>();
const fresh: Array<{ hash: string; ids: number[] }> = [];
const cachedSample: Array<{ hash: string; ids: number[] }> = [];
const wantCheck = Number(args.check);
let cachedCount = 0;

for (const root of trees) {
  const project = await openProject({ root, userConfig: false });
  const store = project.store;
  const files = (await store.listFiles()).filter((f) => f.method !== 'skipped');
  const texts: string[] = [];
  for (let i = 0; i < files.length; i += 256) {
    const paths = files.slice(i, i + 256).map((f) => f.path);
    const [chunksOf, symbolsOf] = await Promise.all([store.getFilesChunks(paths), store.listSymbols(paths)]);
    for (const path of paths) {
      const chunks = chunksOf.get(path) ?? [];
      texts.push(
        coarseText(
          (symbolsOf.get(path) ?? []).map((s) => s.name),
          chunks,
        ),
      );
      for (const c of chunksToEmbed(path, chunks)) texts.push(chunkText(c));
    }
  }
  await project.close();
  const byHash = new Map<string, string>();
  for (const t of texts) {
    const h = textHash(t);
    if (!seen.has(h)) byHash.set(h, t);
    seen.add(h);
  }
  const have = await cache.get(embedder.id, [...byHash.keys()]);
  let added = 0;
  for (const [hash, text] of byHash) {
    if (have.has(hash)) {
      cachedCount++;
      // a spread-out sample: every 7th cached text until the sample is full
      if (cachedSample.length < wantCheck && cachedCount % 7 === 0)
        cachedSample.push({ hash, ids: embedder.encode(text, 'document') });
      continue;
    }
    fresh.push({ hash, ids: embedder.encode(text, 'document') });
    added++;
  }
  console.error(`${root}: ${files.length} files, ${byHash.size} new texts, ${added} to embed`);
}

const all = [...cachedSample, ...fresh];
let bytes = 0;
for (const t of all) bytes += 2 + 2 * t.ids.length;
const buf = Buffer.alloc(bytes);
let at = 0;
for (const t of all) {
  buf.writeUInt16LE(t.ids.length, at);
  at += 2;
  for (const id of t.ids) {
    buf.writeUInt16LE(id, at);
    at += 2;
  }
}
writeFileSync(`${args.out}.ids`, buf);
writeFileSync(`${args.out}.hashes`, `${all.map((t) => t.hash).join('\n')}\n`);
writeFileSync(`${args.out}.check`, `${cachedSample.map((t) => t.hash).join('\n')}\n`);
const tokens = all.reduce((n, t) => n + t.ids.length, 0);
console.error(
  `${fresh.length} texts to embed (${cachedCount} already cached, ${cachedSample.length} of them as a check), ${tokens} tokens, ${(bytes / 2 ** 20).toFixed(1)} MiB; embedder ${embedder.id}`,
);
cache.close();
await embedder.close();
