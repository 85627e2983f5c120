import type { Context } from 'hono';
import { type Env, projectFor } from '../request.ts';

/** The most lines one request reads of a file. */
const MAX_FILE_LINES = 5000;

/** GET /api/file?path=…&start=…&end=…: a slice of one file (secrets redacted by the set's view of it). */
export async function file(c: Context<Env>): Promise<Response> {
  const project = await projectFor(c, c.req.query('repo'));
  const start = Math.max(1, Number(c.req.query('start') ?? 1) || 1);
  const endAsked = Number(c.req.query('end') ?? 0) || Number.MAX_SAFE_INTEGER;
  const slice = await project.readFile(c.req.query('path') ?? '', {
    start,
    end: Math.min(endAsked, start + MAX_FILE_LINES - 1),
  });
  return c.json(slice);
}
