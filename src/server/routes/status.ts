import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { type Env, isLive, projectFor, statusOf } from '../request.ts';

/** GET /api/status: one repository's index (the server's checkout's includes its auto-sync). */
export async function status(c: Context<Env>): Promise<Response> {
  return c.json(await statusOf(c.get('hooks'), await projectFor(c, c.req.query('repo'))));
}

/** GET /api/events: live updates, the status whenever the auto-sync changes state, and every few seconds. */
export async function events(c: Context<Env>): Promise<Response> {
  const hooks = c.get('hooks');
  const project = await projectFor(c, c.req.query('repo'));
  return streamSSE(c, async (stream) => {
    let open = true;
    const push = async () => {
      if (open)
        await stream.writeSSE({ event: 'status', data: JSON.stringify(await statusOf(hooks, project)) });
    };
    const listener = () => void push().catch(() => undefined);
    if (isLive(hooks, project)) hooks.listeners.add(listener);
    stream.onAbort(() => {
      open = false;
      hooks.listeners.delete(listener);
    });
    await push();
    while (open) {
      await stream.sleep(3000);
      await push().catch(() => {
        open = false;
      });
    }
    hooks.listeners.delete(listener);
  });
}
