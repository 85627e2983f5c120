import { z } from 'zod';
import { type Answer, defineTool, READ_ONLY, repoArg, rootArg, type ToolContext } from '../common.ts';

const inputSchema = {
  name: z.string().min(1),
  references: z.boolean().default(true),
  offset: z.number().int().min(0).default(0),
  limit: z.number().int().min(1).max(200).default(50),
  repo: repoArg,
  root: rootArg,
};

type Definition = {
  name: string;
  kind: string;
  container: string | null;
  path: string;
  startLine: number;
  endLine: number;
};

/** find_symbol: a name's definitions, and (paginated) the files that use it. */
export async function findSymbol(
  { name, references, offset, limit, repo, root }: z.infer<z.ZodObject<typeof inputSchema>>,
  { projectOf }: ToolContext,
): Promise<Answer> {
  const project = await projectOf(repo, root);
  const definitions = await project.definitions(name);
  const out: Record<string, unknown> = {
    name,
    definitions: definitions.map(({ path, startLine, endLine, kind, container, name: n }) => ({
      name: n,
      kind,
      container,
      path,
      startLine,
      endLine,
    })),
  };
  if (references) {
    const refs = await project.references(name);
    out.references = refs.slice(offset, offset + limit).map(({ path, lines }) => ({ path, lines }));
    out.referenceFiles = refs.length;
    if (offset + limit < refs.length) out.next = `call again with offset ${offset + limit} for more`;
  }
  if (!definitions.length && !(out.referenceFiles as number))
    out.note = `nothing named ${name} in the index: try search_code`;
  const defs = out.definitions as Definition[];
  const lines = [
    defs.length ? `definitions of ${name}:` : `no definition of ${name}`,
    ...defs.map(
      (d) =>
        `${d.path}:${d.startLine}-${d.endLine} ${d.kind} ${d.container ? `${d.container}.` : ''}${d.name}`,
    ),
  ];
  if (references) {
    const refs = out.references as Array<{ path: string; lines: number[] }>;
    lines.push(
      `references: ${out.referenceFiles} file${out.referenceFiles === 1 ? '' : 's'}${refs.length < (out.referenceFiles as number) ? ` (${offset + 1}-${offset + refs.length} shown)` : ''}`,
      ...refs.map((r) => `${r.path}: ${r.lines.join(', ')}`),
    );
    if (out.next) lines.push(String(out.next));
  }
  if (out.note) lines.push(String(out.note));
  return { text: lines.join('\n'), data: out };
}

export const findSymbolTool = defineTool({
  name: 'find_symbol',
  title: 'Find a symbol',
  description:
    'Where a name (parseConfig, Indexer.run) is defined, and the files and lines that use it (paged with offset).',
  inputSchema,
  annotations: READ_ONLY,
  handler: findSymbol,
});
