import { z } from 'zod';
import { QuarryError } from '../../errors.ts';
import { type Answer, defineTool, type ToolContext } from '../common.ts';

const inputSchema = { wait: z.boolean().default(true) };

/** reindex: an incremental re-index of the live checkout, or the one already running. */
export async function reindex(
  { wait }: z.infer<z.ZodObject<typeof inputSchema>>,
  { set }: ToolContext,
): Promise<Answer> {
  const live = set.live;
  if (!live)
    throw new QuarryError(
      'LOCKED',
      'this server has no checkout to re-index: the repositories are indexed where they are checked out',
    );
  const r = live.reindex();
  if (!r.started)
    return {
      text: `a re-index is already running (since ${r.startedAt}): call index_status to follow it`,
      data: { status: 'already running', startedAt: r.startedAt },
    };
  if (wait) await r.done;
  const stats = await live.project.store.stats();
  const status = wait ? 'done' : 'started';
  return {
    text: `re-index ${status}: ${stats.files} files, ${stats.chunks} chunks`,
    data: { status, startedAt: r.startedAt, files: stats.files, chunks: stats.chunks },
  };
}

export const reindexTool = defineTool({
  name: 'reindex',
  title: 'Re-index',
  description: 'Re-read changed files now (the index follows the files by itself; one re-index at a time).',
  inputSchema,
  annotations: {
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  handler: reindex,
});
