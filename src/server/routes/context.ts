import type { Context } from 'hono';
import type { AssembleOptions } from '../../project/types.ts';
import { body, type Env, projectFor, questionOf, str } from '../request.ts';

/** The context options a request body names; anything of the wrong type is left out, as if not sent. */
function contextOptions(b: Record<string, unknown>): AssembleOptions {
  const num = (k: string) =>
    typeof b[k] === 'number' && Number.isFinite(b[k]) ? (b[k] as number) : undefined;
  const target =
    b.target && typeof b.target === 'object' ? (b.target as { path?: unknown; text?: unknown }) : undefined;
  return {
    ...(num('budget') ? { budget: num('budget')! } : {}),
    ...(num('window') ? { window: num('window')! } : {}),
    ...(num('topK') ? { topK: num('topK')! } : {}),
    ...(b.packing === 'files' || b.packing === 'chunks' ? { packing: b.packing } : {}),
    ...(b.mode === 'hybrid' || b.mode === 'lexical' || b.mode === 'dense' ? { mode: b.mode } : {}),
    ...(str(b.model) ? { model: str(b.model)! } : {}),
    ...(str(b.system) ? { system: str(b.system)! } : {}),
    ...(b.all === true || str(b.all) ? { all: b.all as boolean | string } : {}),
    ...(Array.isArray(b.exclude)
      ? { exclude: b.exclude.filter((x): x is string => typeof x === 'string') }
      : {}),
    ...(b.noMap === true ? { noMap: true } : {}),
    ...(target && typeof target.path === 'string' && typeof target.text === 'string'
      ? { target: { path: target.path, text: target.text } }
      : {}),
  };
}

/** POST /api/context: the context a question needs, packed to a budget. */
export async function context(c: Context<Env>): Promise<Response> {
  const b = await body(c);
  const question = questionOf(b);
  const project = await projectFor(c, b.repo);
  const ctx = await project.context(question, contextOptions(b));
  // the retrieval behind it stays here: the blocks carry the text
  return c.json({ ...ctx, search: null });
}
