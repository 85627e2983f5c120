import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { PgContext } from './context.ts';

/**
 * The postings builder: quarry's own inverted index (`quarry_postings`, one row per document and term with the
 * term's frequency in each field) cut from the code-aware token streams, for BM25 as FTS5 computes it (lexical.ts).
 */

/**
 * Tokens as SQLite's unicode61 tokenizer (with `_` and `$` as token characters) sees the same stream. A token longer
 * than LONG_TERM characters (a minified bundle's line, a base64 blob) is kept as its head and a hash of the whole: a
 * B-tree entry holds at most ~2.7 kB, and a term past it failed the whole batch's write. The same token in a query
 * becomes the same key, so it still finds exactly its documents.
 */
export function lexTokens(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^\p{L}\p{N}_$]+/u)
    .filter(Boolean)
    .map((t) =>
      t.length > LONG_TERM ? `${t.slice(0, 64)}#${createHash('sha256').update(t).digest('hex')}` : t,
    );
}

/** Characters of the longest term kept as it is (up to 4 bytes each: well inside a B-tree entry). */
const LONG_TERM = 256;

/**
 * A document's postings from its three token streams: each term's frequency in the path, the symbol names and the
 * body (capped at a smallint; BM25 saturates long before), and the document's length in tokens (all fields, as FTS5
 * counts it).
 */
export function postingsOf(tokens: { path: string; symbols: string; body: string }): {
  terms: Map<string, [number, number, number]>;
  len: number;
} {
  const terms = new Map<string, [number, number, number]>();
  let len = 0;
  for (const [field, i] of [
    [tokens.path, 0],
    [tokens.symbols, 1],
    [tokens.body, 2],
  ] as const) {
    for (const t of lexTokens(field)) {
      len++;
      let tf = terms.get(t);
      if (!tf) {
        tf = [0, 0, 0];
        terms.set(t, tf);
      }
      if (tf[i] < 32767) tf[i]++;
    }
  }
  return { terms, len };
}

/** Column arrays of postings rows, for one `unnest` insert. */
export class PostingRows {
  scope: string[] = [];
  term: string[] = [];
  doc: number[] = [];
  file: number[] = [];
  tp: number[] = [];
  ts: number[] = [];
  tb: number[] = [];
  len: number[] = [];
  add(scope: 'c' | 'f', doc: number, file: number, p: ReturnType<typeof postingsOf>): void {
    for (const [term, [a, b, c]] of p.terms) {
      this.scope.push(scope);
      this.term.push(term);
      this.doc.push(doc);
      this.file.push(file);
      this.tp.push(a);
      this.ts.push(b);
      this.tb.push(c);
      this.len.push(p.len);
    }
  }
}

/** Inserts the files' and chunks' postings (inside replaceFiles' transaction), in slices. */
export async function insertPostings(ctx: PgContext, c: pg.PoolClient, postings: PostingRows): Promise<void> {
  ctx.written += postings.term.length;
  for (let i = 0; i < postings.term.length; i += 20_000) {
    const s = <T>(a: T[]) => a.slice(i, i + 20_000);
    await c.query(
      `INSERT INTO quarry_postings (repo, scope, term, doc, file_id, tf_path, tf_symbols, tf_body, len)
         SELECT $1, t.scope::"char", t.term, t.doc, t.file_id, t.tp, t.ts, t.tb, t.len
         FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::smallint[], $7::smallint[],
                     $8::smallint[], $9::int[]) AS t(scope, term, doc, file_id, tp, ts, tb, len)`,
      [
        ctx.repoId,
        s(postings.scope),
        s(postings.term),
        s(postings.doc),
        s(postings.file),
        s(postings.tp),
        s(postings.ts),
        s(postings.tb),
        s(postings.len),
      ],
    );
  }
}
