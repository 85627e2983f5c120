import { z } from 'zod';
import { type Answer, defineTool, READ_ONLY, repoArg, rootArg, type ToolContext } from '../common.ts';

const inputSchema = {
  budget: z.number().int().min(200).max(20_000).default(2000).describe('Tokens the map may use'),
  focus: z.array(z.string()).optional().describe('Paths the ranking leans toward, e.g. ["src/server.ts"]'),
  repo: repoArg,
  root: rootArg,
};

/** repo_map: the most referenced files and their definitions, within a token budget. */
export async function repoMap(
  { budget, focus, repo, root }: z.infer<z.ZodObject<typeof inputSchema>>,
  { projectOf }: ToolContext,
): Promise<Answer> {
  const map = await (await projectOf(repo, root)).repoMap({ budget, ...(focus ? { focus } : {}) });
  return {
    text: `${map.text}${map.omitted ? `\n… ${map.omitted} more files with definitions: raise budget to see them` : ''}`,
    data: {
      files: map.entries.map((e) => e.path),
      tokens: map.tokens,
      omitted: map.omitted,
    },
  };
}

export const repoMapTool = defineTool({
  name: 'repo_map',
  title: 'Map of the repository',
  description:
    "An overview of the repository within a token budget: its most referenced files, each with its key definitions (signatures, line numbers), ranked by PageRank over who uses whose names (Aider's repository map). Use it first in an unfamiliar repository; focus leans the ranking toward files you are working on.",
  inputSchema,
  annotations: { title: 'Map of the repository', ...READ_ONLY },
  handler: repoMap,
});
