import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';
import { isQuarryError } from '../../errors.ts';
import { ask as askProject } from '../../host/answers.ts';
import type { Project } from '../../project/types.ts';
import { body, type Env, projectFor, questionOf } from '../request.ts';

/** What the panel shows for a failed answer. */
function askError(err: unknown): string {
  // the panel has no --dry-run or --model: say what works here
  return isQuarryError(err) && err.code === 'BAD_CONFIG' && /^no model configured/.test(err.message)
    ? 'no model configured: set llm.model in the settings below (e.g. ollama:qwen2.5-coder), or QUARRY_MODEL before `quarry serve`'
    : isQuarryError(err)
      ? err.message
      : `internal error: ${(err as Error).message}`;
}

/** One answer as events: routed (and done), or notes, its sources, its tokens and done; or an error. */
async function streamAnswer(
  stream: SSEStreamingApi,
  project: Project,
  question: string,
  model: string | undefined,
): Promise<void> {
  const abort = new AbortController();
  stream.onAbort(() => abort.abort());
  try {
    const res = await askProject(project, question, { signal: abort.signal, ...(model ? { model } : {}) });
    if (res.routed) {
      await stream.writeSSE({ event: 'routed', data: JSON.stringify(res.routed) });
      await stream.writeSSE({ event: 'done', data: '{}' });
      return;
    }
    if (res.fallback) await stream.writeSSE({ event: 'note', data: res.fallback });
    if (res.note) await stream.writeSSE({ event: 'note', data: res.note });
    await stream.writeSSE({
      event: 'sources',
      data: JSON.stringify(
        res.context!.blocks.map(({ n, path, startLine, endLine, tokens }) => ({
          n,
          path,
          startLine,
          endLine,
          tokens,
        })),
      ),
    });
    for await (const piece of res.stream!)
      await stream.writeSSE({ event: 'token', data: JSON.stringify(piece) });
    await stream.writeSSE({ event: 'done', data: JSON.stringify({ model: res.model }) });
  } catch (err) {
    await stream.writeSSE({ event: 'error', data: askError(err) });
  }
}

/** POST /api/ask: an answer, streamed as server-sent events. */
export async function ask(c: Context<Env>): Promise<Response> {
  const b = await body(c);
  const question = questionOf(b);
  const project = await projectFor(c, b.repo);
  const model = typeof b.model === 'string' && b.model ? b.model : undefined;
  return streamSSE(c, (stream) => streamAnswer(stream, project, question, model));
}
