import type { z } from 'zod';
import { unwrap } from '../../host/set.ts';
import { type Answer, defineTool, flatText, READ_ONLY, repoArg, type ToolContext } from '../common.ts';

const inputSchema = { repo: repoArg };

/** index_status: how complete and fresh the index is; the live checkout's status includes its sync. */
export async function indexStatus(
  { repo }: z.infer<z.ZodObject<typeof inputSchema>>,
  { set }: ToolContext,
): Promise<Answer> {
  const project = await set.get(repo);
  const st = (set.live && unwrap(project) === set.live.project
    ? await set.live.status()
    : await project.status()) as unknown as Record<string, unknown>;
  return { text: flatText(st), data: st };
}

export const indexStatusTool = defineTool({
  name: 'index_status',
  title: 'Index status',
  description: 'How complete and fresh the index is: files, pending changes, embedding progress, last sync.',
  inputSchema,
  annotations: READ_ONLY,
  handler: indexStatus,
});
