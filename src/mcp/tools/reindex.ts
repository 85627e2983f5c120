import { z } from 'zod';
import { QuarryError } from '../../errors.ts';
import { type Answer, defineTool, type ToolContext } from '../common.ts';

const inputSchema = { wait: z.boolean().default(true).describe('Wait for the lexical update to finish') };

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
  description:
    'Bring the index up to date with the files on disk (incremental: only changed files are read). If a re-index is already running, reports that one instead of starting another. Usually unnecessary: the index follows file saves by itself.',
  inputSchema,
  annotations: {
    title: 'Re-index',
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  handler: reindex,
});
