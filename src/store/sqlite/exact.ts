import { literalTerms } from '../trigram-terms.ts';
import type { ExactIndex } from '../types.ts';
import { dataVersion, type SqliteContext } from './context.ts';

/** Every file's text by trigram (`trigram_fts`, store/trigram-terms.ts), for `quarry grep`. */
export function exactIndex(ctx: SqliteContext): ExactIndex {
  return {
    candidates: async (plan) => trigramCandidates(ctx, plan),
    missingText: async () => missingText(ctx),
  };
}

/** See ExactIndex.missingText: two counts while the trigram table is complete (a no-op run asks every time). */
function missingText(ctx: SqliteContext): string[] {
  const lacking = `FROM files WHERE method NOT IN ('skipped', 'quick')`;
  const texts = Number(ctx.db.prepare('SELECT count(*) FROM trigram_fts_docsize').pluck().get());
  if (texts >= Number(ctx.db.prepare(`SELECT count(*) ${lacking}`).pluck().get())) return [];
  return ctx.db
    .prepare(`SELECT path ${lacking} AND id NOT IN (SELECT id FROM trigram_fts_docsize)`)
    .pluck()
    .all() as string[];
}

/** Files whose text holds a plan's literals (FTS5 trigram phrases match substrings, without regard to case). */
function trigramCandidates(ctx: SqliteContext, plan: string[][]): string[] | undefined {
  // every file with text has its row (an index from before the table existed fills as its files are re-read, and a
  // large run's first pass writes none): asked again only once the index has changed
  const version = dataVersion(ctx);
  if (ctx.caches.trigramsCompleteAt !== version) {
    const count = (sql: string) => Number(ctx.db.prepare(sql).pluck().get());
    if (count('SELECT count(*) FROM trigram_fts_docsize') < Number(ctx.stmts.countFts.get()))
      return undefined;
    ctx.caches.trigramsCompleteAt = version;
  }
  const match = ftsTrigramQuery(plan);
  if (match === undefined) return undefined;
  return ctx.db
    .prepare(
      `SELECT f.path FROM trigram_fts t JOIN files f ON f.id = t.rowid WHERE trigram_fts MATCH ? ORDER BY f.path`,
    )
    .pluck()
    .all(match) as string[];
}

/**
 * An FTS5 MATCH expression for a trigram plan, or undefined when a group has no literal of three characters to look
 * up. `trigram_fts` holds each file's distinct trigrams as words (store/trigram-terms.ts) without positions, so a literal
 * is the AND of its trigrams' words: a superset of the files that hold it, which grep verifies against the text anyway.
 */
function ftsTrigramQuery(plan: string[][]): string | undefined {
  const groups: string[] = [];
  for (const literals of plan) {
    const grams = new Set(literals.flatMap(literalTerms));
    if (!grams.size) return undefined;
    groups.push([...grams].map((t) => `"${t}"`).join(' AND '));
  }
  if (!groups.length) return undefined;
  return groups.length === 1 ? groups[0] : groups.map((g) => `(${g})`).join(' OR ');
}
