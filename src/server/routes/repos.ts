import type { Context } from 'hono';
import { defaultRepo } from '../../host/set.ts';
import type { Env } from '../request.ts';

/** GET /api/repos: the repositories this request may see, and the one a request that names none gets. */
export async function repos(c: Context<Env>): Promise<Response> {
  const repos = await c.get('set').list();
  return c.json({
    repos,
    default:
      defaultRepo(
        repos.map((r) => r.name),
        c.get('hooks').live?.project.name,
      ) ?? null,
  });
}
