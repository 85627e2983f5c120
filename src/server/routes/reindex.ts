import type { Context } from 'hono';
import { QuarryError } from '../../errors.ts';
import { body, type Env, isLive, projectFor } from '../request.ts';

/** POST /api/reindex: re-index the server's own checkout (others are indexed where they are checked out). */
export async function reindex(c: Context<Env>): Promise<Response> {
  const b = await body(c).catch(() => ({}) as Record<string, unknown>);
  const project = await projectFor(c, b.repo);
  if (!c.get('grant').reindex)
    throw new QuarryError('AUTH', `this token may read ${project.name} but not re-index it`);
  const hooks = c.get('hooks');
  if (!isLive(hooks, project))
    throw new QuarryError(
      'LOCKED',
      `${project.name} is indexed where it is checked out: run \`quarry index\` there (or in CI)`,
    );
  const { started, startedAt } = hooks.live!.reindex();
  return c.json({ started, startedAt }, 202);
}
