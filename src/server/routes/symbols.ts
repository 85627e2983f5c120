import type { Context } from 'hono';
import { QuarryError } from '../../errors.ts';
import { body, type Env, projectFor, questionOf } from '../request.ts';

/** `?name=`: the symbol asked about. */
function named(c: Context): string {
  const name = c.req.query('name') ?? '';
  if (!name.trim()) throw new QuarryError('BAD_INPUT', 'name is empty: pass ?name=parseConfig');
  return name;
}

/** POST /api/route: a structural question answered from the symbol index, or why it falls back to retrieval. */
export async function route(c: Context<Env>): Promise<Response> {
  const b = await body(c);
  const question = questionOf(b);
  return c.json(await (await projectFor(c, b.repo)).route(question));
}

/** `?limit=`: how many definitions or files a list may hold (the project's own default when it is absent). */
function limited(c: Context): { limit?: number } {
  const raw = c.req.query('limit');
  if (raw === undefined) return {};
  const limit = Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100_000)
    throw new QuarryError('BAD_INPUT', 'limit must be a whole number from 1 to 100000');
  return { limit };
}

/** GET /api/definitions?name=…&limit=…: where a symbol is defined. */
export async function definitions(c: Context<Env>): Promise<Response> {
  return c.json({
    definitions: await (await projectFor(c, c.req.query('repo'))).definitions(named(c), limited(c)),
  });
}

/** GET /api/references?name=…&limit=…: where a symbol is used (`limit` counts files). */
export async function references(c: Context<Env>): Promise<Response> {
  return c.json({
    references: await (await projectFor(c, c.req.query('repo'))).references(named(c), limited(c)),
  });
}

/** GET /api/outline?path=…: one file's symbols. */
export async function outline(c: Context<Env>): Promise<Response> {
  return c.json(await (await projectFor(c, c.req.query('repo'))).outline(c.req.query('path') ?? ''));
}

/** GET /api/map?tokens=…&focus=…&q=…: the repository map, to a token budget, leaning towards a question's names. */
export async function map(c: Context<Env>): Promise<Response> {
  const tokens = Number(c.req.query('tokens') ?? 2048);
  if (!Number.isInteger(tokens) || tokens < 64 || tokens > 100_000)
    throw new QuarryError('BAD_INPUT', 'tokens must be a whole number from 64 to 100000');
  const focus = c.req.queries('focus');
  const question = c.req.query('q')?.slice(0, 2000);
  return c.json(
    await (await projectFor(c, c.req.query('repo'))).repoMap({
      budget: tokens,
      ...(focus ? { focus } : {}),
      ...(question ? { question } : {}),
    }),
  );
}
