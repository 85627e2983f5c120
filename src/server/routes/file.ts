import type { Context } from 'hono';
import { pageOf } from '../../host/pages.ts';
import { type Env, projectFor } from '../request.ts';

/** The most lines one request reads of a file, and the most characters it sends (a long line in pieces). */
const MAX_FILE_LINES = 5000;
const MAX_FILE_CHARS = 200_000;

/**
 * GET /api/file?path=…&start=…&end=…&column=…: a slice of one file (secrets redacted by the set's view of it), at
 * most MAX_FILE_CHARS characters; a line cut short says where it goes on (`nextColumn`).
 */
export async function file(c: Context<Env>): Promise<Response> {
  const project = await projectFor(c, c.req.query('repo'));
  const start = Math.max(1, Number(c.req.query('start') ?? 1) || 1);
  const endAsked = Number(c.req.query('end') ?? 0) || Number.MAX_SAFE_INTEGER;
  const slice = await project.readFile(c.req.query('path') ?? '', {
    start,
    end: Math.min(endAsked, start + MAX_FILE_LINES - 1),
  });
  const column = Math.max(1, Number(c.req.query('column') ?? 1) || 1);
  const page = pageOf(slice.start, slice.lines, column, MAX_FILE_CHARS);
  return c.json({
    ...slice,
    lines: page.lines,
    end: page.end,
    ...(column > 1 ? { column } : {}),
    ...(page.nextColumn ? { nextColumn: page.nextColumn } : {}),
  });
}
