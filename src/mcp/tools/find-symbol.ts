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

/** How many definitions one answer lists (a common name like `main` has thousands in a large repository). */
const DEFINITIONS_SHOWN = 200;

/** find_symbol: a name's definitions, and (paginated) the files that use it. Every list says when it was cut. */
export async function findSymbol(
  { name, references, offset, limit, repo, root }: z.infer<z.ZodObject<typeof inputSchema>>,
  { projectOf }: ToolContext,
): Promise<Answer> {
  const project = await projectOf(repo, root);
  const found = await project.definitions(name, { limit: DEFINITIONS_SHOWN + 1 });
  const definitions = found.slice(0, DEFINITIONS_SHOWN);
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
  if (found.length > definitions.length)
    out.moreDefinitions = `only the first ${DEFINITIONS_SHOWN} definitions (in path order): name the class (Class.method) to narrow them`;
  let more = false;
  let using = 0; // files read that use the name, this page and those before it
  if (references) {
    // one file past the page says whether more exist, without reading every file that uses a common name
    const refs = await project.references(name, { limit: offset + limit + 1 });
    using = refs.length;
    more = refs.length > offset + limit;
    out.references = refs.slice(offset, offset + limit).map(({ path, lines }) => ({ path, lines }));
    if (more) out.next = `call again with offset ${offset + limit} for more`;
    else out.referenceFiles = refs.length;
  }
  if (!definitions.length && !using) out.note = `nothing named ${name} in the index: try search_code`;
  const defs = out.definitions as Definition[];
  const lines = [
    defs.length ? `definitions of ${name}:` : `no definition of ${name}`,
    ...defs.map(
      (d) =>
        `${d.path}:${d.startLine}-${d.endLine} ${d.kind} ${d.container ? `${d.container}.` : ''}${d.name}`,
    ),
  ];
  if (out.moreDefinitions) lines.push(String(out.moreDefinitions));
  if (references) {
    const refs = out.references as Array<{ path: string; lines: number[] }>;
    const span = refs.length ? `files ${offset + 1}-${offset + refs.length}` : `none from offset ${offset}`;
    lines.push(
      more
        ? `references: ${span} of more`
        : `references: ${out.referenceFiles} file${out.referenceFiles === 1 ? '' : 's'}${offset > 0 || refs.length < (out.referenceFiles as number) ? ` (${span} shown)` : ''}`,
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
