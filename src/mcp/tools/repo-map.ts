import { z } from 'zod';
import { type Answer, defineTool, READ_ONLY, repoArg, rootArg, type ToolContext } from '../common.ts';

const inputSchema = {
  budget: z.number().int().min(200).max(20_000).default(2000),
  focus: z.array(z.string()).optional().describe('Paths to lean toward'),
  question: z.string().max(2000).optional().describe('Lean toward what this question names'),
  repo: repoArg,
  root: rootArg,
};

/** repo_map: the most referenced files and their definitions, within a token budget. */
export async function repoMap(
  { budget, focus, question, repo, root }: z.infer<z.ZodObject<typeof inputSchema>>,
  { projectOf }: ToolContext,
): Promise<Answer> {
  const map = await (await projectOf(repo, root)).repoMap({
    budget,
    ...(focus ? { focus } : {}),
    ...(question ? { question } : {}),
  });
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
  description: 'The most referenced files and their key definitions, within a token budget (focus leans it).',
  inputSchema,
  annotations: READ_ONLY,
  handler: repoMap,
});
