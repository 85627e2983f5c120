import type { Context } from 'hono';
import { panelAsset } from '../assets.ts';
import { PANEL_HTML } from '../panel.ts';
import type { Env } from '../request.ts';

/** GET /: the panel's page. */
export function page(c: Context<Env>): Response {
  return c.html(PANEL_HTML);
}

/** GET /assets/:name: the panel's libraries, from quarry's own dependencies (no CDN: the panel works offline). */
export function asset(c: Context<Env>): Response {
  const found = panelAsset(c.req.param('name') ?? '');
  if (!found) return c.json({ error: 'no such asset' }, 404);
  return c.body(found.body, 200, {
    'content-type': found.type,
    'cache-control': 'public, max-age=86400',
  });
}
