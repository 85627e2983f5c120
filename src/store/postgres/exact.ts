import type pg from 'pg';
import { foldCase } from '../trigram-terms.ts';
import type { FileUpdate } from '../types.ts';
import { clean, type PgContext, query } from './context.ts';

/**
 * `quarry grep`'s candidates (each file's trigrams under a GIN index) and the files' text they are cut from, which
 * the store keeps so that a server with no checkout serves files (the ContentStore).
 */

const wellFormed = (s: string) =>
  s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');

/**
 * The distinct trigrams of a text, case-folded (store/trigram-terms.ts `foldCase`, as SQLite's trigram words): what
 * `quarry_file_text.trigrams` holds and a literal is looked up by.
 */
export function trigramsOf(text: string): string[] {
  const lower = foldCase(text);
  const out = new Set<string>();
  // by UTF-16 units, as literals are cut the same way; a window that halves a surrogate pair (an emoji) keeps a
  // U+FFFD in that half, since PostgreSQL refuses a lone surrogate (a file with an emoji failed the whole batch)
  for (let i = 0; i + 3 <= lower.length; i++) out.add(wellFormed(lower.slice(i, i + 3)));
  return [...out];
}

/** Stores or clears each file's text (inside replaceFiles' transaction). */
export async function writeFileTexts(
  c: pg.PoolClient,
  list: FileUpdate[],
  idOf: Map<string, number>,
): Promise<void> {
  // the text as indexed (a file without text, skipped or from an older quarry, is read from disk if at all)
  const texts = list.filter((u) => u.text !== undefined);
  await c.query(`DELETE FROM quarry_file_text WHERE file_id = ANY($1::bigint[])`, [
    list.filter((u) => u.text === undefined).map((u) => idOf.get(u.file.path)!),
  ]);
  if (texts.length)
    await c.query(
      `INSERT INTO quarry_file_text (file_id, text, trigrams)
         SELECT t.id, t.text, ARRAY(SELECT json_array_elements_text(t.trigrams))
         FROM unnest($1::bigint[], $2::text[], $3::json[]) AS t(id, text, trigrams)
         ON CONFLICT (file_id) DO UPDATE SET text = EXCLUDED.text, trigrams = EXCLUDED.trigrams`,
      [
        texts.map((u) => idOf.get(u.file.path)!),
        texts.map((u) => clean(u.text!)),
        texts.map((u) => JSON.stringify(u.file.method === 'skipped' ? [] : trigramsOf(clean(u.text!)))),
      ],
    );
}

/** Files whose trigrams hold every trigram of one group's literals (the GIN index answers `@>`). */
export async function trigramCandidates(ctx: PgContext, plan: string[][]): Promise<string[] | undefined> {
  // files indexed before the trigram column existed fill it as they are re-read: until then, read every file
  // (once complete it stays so: every write keeps it, so the count is asked until then only)
  if (!ctx.trigramsComplete) {
    const [c] = await query(
      ctx,
      `SELECT count(*) FILTER (WHERE f.method != 'skipped') AS files, count(t.trigrams) AS indexed
         FROM quarry_files f LEFT JOIN quarry_file_text t ON t.file_id = f.id WHERE f.repo = $1`,
      [ctx.repoId],
      'looking up trigrams',
    );
    if (Number(c?.indexed ?? 0) < Number(c?.files ?? 0)) return undefined;
    ctx.trigramsComplete = true;
  }
  const groups = plan.map((g) => [...new Set(g.flatMap((lit) => trigramsOf(lit)))]);
  const rows = await query(
    ctx,
    `SELECT f.path FROM quarry_file_text t JOIN quarry_files f ON f.id = t.file_id
       WHERE f.repo = $1 AND (${groups.map((_, i) => `t.trigrams @> $${i + 2}::text[]`).join(' OR ')})
       ORDER BY f.path`,
    [ctx.repoId, ...groups],
    'looking up trigrams',
  );
  return rows.map((r) => r.path as string);
}

export async function readTexts(ctx: PgContext, paths: string[]): Promise<Map<string, string>> {
  if (!paths.length) return new Map();
  const rows = await query(
    ctx,
    `SELECT f.path, t.text FROM quarry_files f JOIN quarry_file_text t ON t.file_id = f.id
       WHERE f.repo = $1 AND f.path = ANY($2::text[])`,
    [ctx.repoId, paths],
    'reading file text',
  );
  return new Map(rows.map((r) => [r.path as string, r.text as string]));
}
