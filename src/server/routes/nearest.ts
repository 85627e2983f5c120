import type { Context } from 'hono';
import { z } from 'zod';
import { QuarryError } from '../../errors.ts';
import { NEAREST_MAX } from '../../project/types.ts';
import { body, type Env, projectFor } from '../request.ts';

const paths = z.array(z.string().max(4096)).max(20_000);

/** What POST /api/nearest takes: a query vector of the index's embedder, the level, and the core's filter. */
export const NearestBody = z
  .object({
    repo: z.string().optional(),
    embedder: z.string().min(1).max(300),
    vector: z.array(z.number()).min(1).max(8192),
    level: z.enum(['chunks', 'files']),
    limit: z.number().int().min(1).max(NEAREST_MAX),
    filter: z
      .object({
        paths: paths.optional(),
        pathPrefixes: paths.optional(),
        languages: z.array(z.string().max(100)).max(100).optional(),
        excludePaths: paths.optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

/**
 * POST /api/nearest {embedder, vector, level, limit, filter}: the stored vectors nearest a query vector, with their
 * cosine similarity (what a client's local overlay merges with its own vectors; docs/team.md).
 */
export async function nearest(c: Context<Env>): Promise<Response> {
  const parsed = NearestBody.safeParse(await body(c));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new QuarryError(
      'BAD_INPUT',
      `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'} (send {"embedder", "vector", "level", "limit"}; see quarry serve in the README)`,
    );
  }
  const { repo, ...q } = parsed.data;
  const project = await projectFor(c, repo);
  if (!project.nearest)
    throw new QuarryError('BAD_INPUT', `${project.name} keeps no vectors this server can search`);
  return c.json(await project.nearest(q));
}
