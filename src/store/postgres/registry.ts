import type pg from 'pg';
import { QuarryError } from '../../errors.ts';
import type { RepoInfo } from '../types.ts';
import { type PgContext, query, type Row, tx } from './context.ts';
import { redactUrl } from './errors.ts';
import { LOCK_SPACE, repoLockKey } from './lock.ts';

/** The repositories of one database (`quarry_repos`): the one a store serves, and the list `quarry repos` shows. */

/** Finds the repository's row, or makes it with `create` (NO_INDEX without); sets `ctx.repoId`. */
export async function findRepository(ctx: PgContext, create: boolean): Promise<void> {
  const found = await query(ctx, `SELECT id FROM quarry_repos WHERE name = $1`, [ctx.repoName]);
  if (found.length) ctx.repoId = Number(found[0]!.id);
  else if (!create)
    throw new QuarryError(
      'NO_INDEX',
      `no index of repository "${ctx.repoName}" in ${redactUrl(ctx.url)}: run \`quarry index\` with this store first`,
    );
  else {
    // names are compared without regard to case: `ACME/Alpha` beside `acme/alpha` would be a second key for one
    // repository, escaping the taken-key check and a token's scope
    const twin = await query(ctx, `SELECT name FROM quarry_repos WHERE lower(name) = lower($1) LIMIT 1`, [
      ctx.repoName,
    ]);
    if (twin.length)
      throw new QuarryError(
        'BAD_INPUT',
        `${ctx.repoName} differs from the repository ${twin[0]!.name} only in case: use --repo ${twin[0]!.name} (names are compared without regard to case)`,
      );
    const made = await query(
      ctx,
      `INSERT INTO quarry_repos (name, created_at) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id`,
      [ctx.repoName, Date.now()],
      'creating the repository',
    );
    ctx.repoId = Number(made[0]!.id);
  }
}

export async function listRepos(ctx: PgContext): Promise<RepoInfo[]> {
  const rows = await query(
    ctx,
    `SELECT r.name,
              (SELECT count(*) FROM quarry_files f WHERE f.repo = r.id) AS files,
              (SELECT coalesce(sum(size), 0) FROM quarry_files f WHERE f.repo = r.id) AS bytes,
              r.chunk_docs AS chunks,
              (SELECT value FROM quarry_meta m WHERE m.repo = r.id AND m.key = 'last_indexed_at') AS last,
              (SELECT value FROM quarry_meta m WHERE m.repo = r.id AND m.key = 'source') AS source,
              (SELECT e.id FROM quarry_meta m JOIN quarry_embedders e ON e.key = m.value
                WHERE m.repo = r.id AND m.key = 'embedder') AS embedder
       FROM quarry_repos r ORDER BY r.name`,
    [],
    'listing repositories',
  );
  return rows.map((r) => repoInfo(r));
}

export async function removeRepo(
  ctx: PgContext,
  name: string,
  options: { waitMs?: number } = {},
): Promise<boolean> {
  const deadline = Date.now() + (options.waitMs ?? 0);
  for (;;) {
    const removed = await tx(ctx, 'removing the repository', async (c) => {
      // the repository's writer lock, for this transaction: a running `quarry index` of it keeps it (its rows
      // removed under it, the indexer died on a foreign key), and no indexer starts while the rows go
      const lock = await c.query(`SELECT pg_try_advisory_xact_lock($1, $2) AS ok`, [
        LOCK_SPACE,
        repoLockKey(name),
      ]);
      if (!lock.rows[0].ok) return 'locked' as const;
      return dropRepoRows(c, name);
    });
    if (removed !== 'locked') return removed;
    if (Date.now() >= deadline)
      throw new QuarryError(
        'LOCKED',
        `another quarry is indexing repository "${name}": wait for it, or run with --wait`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function dropRepoRows(c: pg.PoolClient, name: string): Promise<boolean> {
  const found = await c.query(`SELECT id FROM quarry_repos WHERE name = $1`, [name]);
  if (!found.rows.length) return false;
  const id = Number(found.rows[0].id);
  // the postings carry no foreign key (they are written in bulk); everything else cascades from the repository
  await c.query(`DELETE FROM quarry_postings WHERE repo = $1`, [id]);
  for (const t of (await c.query(`SELECT key FROM quarry_embedders`)).rows) {
    await c.query(`DELETE FROM quarry_vec_chunks_${t.key} WHERE repo = $1`, [id]);
    await c.query(`DELETE FROM quarry_vec_files_${t.key} WHERE repo = $1`, [id]);
  }
  await c.query(`DELETE FROM quarry_repos WHERE id = $1`, [id]);
  return true;
}

/** A `quarry repos` row from the registry's query (the meta values as stored). */
function repoInfo(r: Row): RepoInfo {
  let source: { root?: string; host?: string; git?: RepoInfo['git'] } = {};
  try {
    source = JSON.parse((r.source as string | null) ?? '{}');
  } catch {
    // an older index wrote none
  }
  return {
    name: r.name as string,
    files: Number(r.files),
    chunks: Number(r.chunks),
    bytes: Number(r.bytes),
    lastIndexedAt: r.last ? new Date(Number(r.last)).toISOString() : null,
    embedder: (r.embedder as string | null) ?? null,
    git: source.git ?? null,
    source: source.root ? { root: source.root, host: source.host ?? '' } : null,
  };
}
