import type { Route } from '../request.ts';
import { ask } from './ask.ts';
import { context } from './context.ts';
import { file } from './file.ts';
import { grep } from './grep.ts';
import { mcp } from './mcp.ts';
import { nearest } from './nearest.ts';
import { asset, page } from './panel.ts';
import { reindex } from './reindex.ts';
import { repos } from './repos.ts';
import { search } from './search.ts';
import { getSettings, putSettings } from './settings.ts';
import { events, status } from './status.ts';
import { definitions, map, outline, references, route } from './symbols.ts';

/** Every route the server answers, in the order Hono matches them. */
export const ROUTES: Route[] = [
  { method: 'GET', path: '/', handler: page },
  { method: 'GET', path: '/assets/:name', handler: asset },
  { method: 'GET', path: '/api/repos', handler: repos },
  { method: 'GET', path: '/api/status', handler: status },
  { method: 'GET', path: '/api/search', handler: search },
  { method: 'POST', path: '/api/grep', handler: grep },
  { method: 'POST', path: '/api/nearest', handler: nearest },
  { method: 'POST', path: '/api/context', handler: context },
  { method: 'POST', path: '/api/route', handler: route },
  { method: 'GET', path: '/api/definitions', handler: definitions },
  { method: 'GET', path: '/api/references', handler: references },
  { method: 'GET', path: '/api/outline', handler: outline },
  { method: 'GET', path: '/api/map', handler: map },
  { method: 'POST', path: '/api/ask', handler: ask },
  { method: 'POST', path: '/api/reindex', handler: reindex },
  { method: 'GET', path: '/api/settings', handler: getSettings },
  { method: 'PUT', path: '/api/settings', handler: putSettings },
  { method: 'GET', path: '/api/file', handler: file },
  { method: 'GET', path: '/api/events', handler: events },
  { method: 'ALL', path: '/mcp', handler: mcp },
];
