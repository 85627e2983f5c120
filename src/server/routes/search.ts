import type { Context } from 'hono';
import { QuarryError } from '../../errors.ts';
import { searchFilter } from '../../host/set.ts';
import { resultJson, searchMode } from '../../host/vocabulary.ts';
import type { Env } from '../request.ts';

/** `?k=` and `?files=`: whole numbers from 1 to 400 (`files` may be absent). */
function searchCounts(c: Context<Env>): { k: number; files: number | undefined } {
  const k = Number(c.req.query('k') ?? 10);
  if (!Number.isInteger(k) || k < 1 || k > 400)
    throw new QuarryError('BAD_INPUT', 'k must be a whole number from 1 to 400');
  const files = c.req.query('files') === undefined ? undefined : Number(c.req.query('files'));
  if (files !== undefined && (!Number.isInteger(files) || files < 1 || files > 400))
    throw new QuarryError('BAD_INPUT', 'files must be a whole number from 1 to 400');
  return { k, files };
}

/** GET /api/search?q=…: one search over the repositories the request names (one, several, or `*`). */
export async function search(c: Context<Env>): Promise<Response> {
  const q = c.req.query('q') ?? '';
  if (!q.trim()) throw new QuarryError('BAD_INPUT', 'q is empty: pass ?q=what to look for');
  const { k, files } = searchCounts(c);
  const mode = c.req.query('mode');
  const filter = searchFilter({
    pathPrefixes: c.req.queries('path'),
    languages: c.req.queries('lang'),
    paths: c.req.queries('only'),
    excludePaths: c.req.queries('exclude'),
  });
  // several repositories (repo=a&repo=b, or repo=* for all this token may see), or one
  const res = await c.get('set').search(q, {
    topK: k,
    ...(files ? { topFiles: files } : {}),
    ...(mode ? { mode: searchMode(mode) } : {}),
    ...(filter ? { filter } : {}),
    repos: c.req.queries('repo') ?? [],
  });
  const full = c.req.query('full') === '1';
  return c.json({
    query: res.query,
    mode: res.mode,
    tookMs: res.tookMs,
    // `full`: every field, for another quarry to use as its own (--remote)
    results: full ? res.results : res.results.map(resultJson),
    files: res.files,
    ...(res.stale ? { stale: res.stale } : {}),
    ...('repos' in res ? { repos: res.repos } : {}),
    // the set's view redacted the snippets: another quarry asking (--remote, a search sent to this server) need not
    ...(res.redacted ? { redacted: true } : {}),
  });
}
