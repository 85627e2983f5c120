import { z } from 'zod';
import { SEARCH_MODES } from '../../host/vocabulary.ts';
import { type Answer, defineTool, READ_ONLY, repoArg, rootArg, type ToolContext } from '../common.ts';

const inputSchema = {
  question: z.string().min(1),
  budget: z.number().int().min(500).max(200_000).default(8000),
  packing: z.enum(['chunks', 'files']).optional(),
  mode: z.enum(SEARCH_MODES).optional(),
  all: z
    .string()
    .optional()
    .describe('Every indexed file matching this mask ("src/**/*.ts"), or refused if over budget'),
  repo: repoArg,
  root: rootArg,
};

/** get_context: the prompt `quarry ask --dry-run` prints, with its sources listed for citation. */
export async function getContext(
  { question, budget, packing, mode, all, repo, root }: z.infer<z.ZodObject<typeof inputSchema>>,
  { projectOf }: ToolContext,
): Promise<Answer> {
  const ctx = await (await projectOf(repo, root)).context(question, {
    budget,
    ...(packing ? { packing } : {}),
    ...(mode ? { mode } : {}),
    ...(all ? { all } : {}),
  });
  const sources = ctx.blocks.map(
    (b) => `[${b.n}] ${b.path}:${b.startLine}-${b.endLine} (${b.tokens} tokens)`,
  );
  return {
    text: `${ctx.user}\n\n---\nsources:\n${sources.join('\n')}\n${ctx.tokens.prompt} prompt tokens, budget ${ctx.budget.hard}`,
    data: {
      sources: ctx.blocks.map(({ n, path, startLine, endLine, tokens }) => ({
        n,
        path,
        startLine,
        endLine,
        tokens,
      })),
      promptTokens: ctx.tokens.prompt,
      budget: ctx.budget.hard,
    },
  };
}

export const getContextTool = defineTool({
  name: 'get_context',
  title: 'Get context for a question',
  description:
    'The code that answers a question, within a token budget, in labelled blocks [n] path:start-end to cite.',
  inputSchema,
  annotations: READ_ONLY,
  handler: getContext,
});
