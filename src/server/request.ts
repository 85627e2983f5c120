import type { Context } from 'hono';
import { isQuarryError, QuarryError } from '../errors.ts';
import { type ProjectSet, unwrap } from '../host/set.ts';
import type { Grant } from '../host/tokens.ts';
import type { Project } from '../project/types.ts';
import type { SyncStatus } from '../watch/autosync.ts';
import type { LiveProject } from '../watch/live.ts';

/** The checkout this server keeps fresh (if any), and who listens for its status changes (the panel's events). */
export interface LiveHooks {
  live: LiveProject | null;
  listeners: Set<(s: SyncStatus) => void>;
}

/** What every request carries: its token's grant, the repositories that grant sees, and the server's checkout. */
export type Env = { Variables: { grant: Grant; set: ProjectSet; hooks: LiveHooks } };

export type RouteHandler = (c: Context<Env>) => Response | Promise<Response>;

/** One route of the API as data: Hono mounts the table in order. */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'ALL';
  path: string;
  handler: RouteHandler;
}

/** The HTTP status a quarry error stands for; anything else is a 500. */
export function httpStatus(err: unknown): number {
  if (!isQuarryError(err)) return 500;
  switch (err.code) {
    case 'BAD_INPUT':
    case 'BAD_CONFIG':
      return 400;
    case 'AUTH':
      return 403;
    case 'TOO_BIG':
      return 413;
    case 'LOCKED':
      return 409;
    case 'NO_INDEX':
    case 'NOT_FOUND':
      return 404;
    case 'LLM':
    case 'REMOTE':
      return 502;
    case 'IO':
      return 503; // the server is up; what it reads (its store) is not
    default:
      return 500;
  }
}

export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The request's body: a JSON object, or BAD_INPUT. */
export async function body(c: Context): Promise<Record<string, unknown>> {
  let b: unknown;
  try {
    b = await c.req.json();
  } catch {
    throw new QuarryError('BAD_INPUT', 'the request body is not valid JSON');
  }
  if (typeof b !== 'object' || b === null || Array.isArray(b))
    throw new QuarryError('BAD_INPUT', 'send a JSON object');
  return b as Record<string, unknown>;
}

export function questionOf(b: Record<string, unknown>): string {
  const question = str(b.question) ?? '';
  if (!question.trim()) throw new QuarryError('BAD_INPUT', 'question is empty: send {"question": "…"}');
  return question;
}

export function repoOf(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new QuarryError('BAD_INPUT', 'repo must be a repository name');
  return v;
}

/** The repository a request names (or the default one), from the repositories its token may see. */
export function projectFor(c: Context<Env>, repo?: unknown): Promise<Project> {
  return c.get('set').get(repoOf(repo));
}

/** Whether a project (as a face sees it) is the server's own checkout. */
export function isLive(hooks: LiveHooks, p: Project): boolean {
  return hooks.live !== null && unwrap(p) === hooks.live.project;
}

/** A project's status: the live one's includes its auto-sync and re-indexing. */
export async function statusOf(hooks: LiveHooks, p: Project) {
  return isLive(hooks, p) ? hooks.live!.status() : p.status();
}
