import { z } from 'zod';
import { type Answer, defineTool, READ_ONLY, repoArg, rootArg, type ToolContext } from '../common.ts';

const inputSchema = {
  path: z.string().min(1).describe('From the repository root'),
  repo: repoArg,
  root: rootArg,
};

/** list_symbols: one file's outline, definitions then top-level variables. */
export async function listSymbols(
  { path, repo, root }: z.infer<z.ZodObject<typeof inputSchema>>,
  { projectOf }: ToolContext,
): Promise<Answer> {
  const o = await (await projectOf(repo, root)).outline(path);
  const symbols = o.symbols.map(({ name, kind, container, startLine, endLine }) => ({
    name,
    kind,
    container,
    startLine,
    endLine,
  }));
  const lines = [
    `${o.path}: ${symbols.length} definition${symbols.length === 1 ? '' : 's'}, ${o.variables.length} top-level variable${o.variables.length === 1 ? '' : 's'}`,
    ...symbols.map(
      (d) => `${d.startLine}-${d.endLine} ${d.kind} ${d.container ? `${d.container}.` : ''}${d.name}`,
    ),
    ...o.variables.map((v) => `${v.line} ${v.kind} ${v.name}`),
  ];
  return { text: lines.join('\n'), data: { path: o.path, symbols, variables: o.variables } };
}

export const listSymbolsTool = defineTool({
  name: 'list_symbols',
  title: 'List the symbols of a file',
  description: "A file's outline: its definitions with line ranges, then its top-level variables.",
  inputSchema,
  annotations: READ_ONLY,
  handler: listSymbols,
});
