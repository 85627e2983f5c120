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
/** How many files using a name are counted for a page's total (past it, the total says "over"). */
const REFERENCE_FILES_COUNTED = 10_000;

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
  let using = 0; // files that use the name, counted up to REFERENCE_FILES_COUNTED
  if (references) {
    // the whole list, so that every page says how many files and lines there are in all (issue 65)
    const refs = await project.references(name, { limit: REFERENCE_FILES_COUNTED + 1 });
    const counted = refs.slice(0, REFERENCE_FILES_COUNTED);
    using = counted.length;
    more = refs.length > offset + limit;
    out.references = refs.slice(offset, offset + limit).map(({ path, lines }) => ({ path, lines }));
    out.referenceFiles = using;
    out.referenceLines = counted.reduce((n, r) => n + r.lines.length, 0);
    if (refs.length > counted.length) out.referenceFilesOver = true; // more than were counted
    if (more) out.next = `call again with offset ${offset + limit} for more`;
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
    const span = refs.length
      ? `files ${offset + 1}-${offset + refs.length} shown`
      : `none from offset ${offset}`;
    const files = out.referenceFiles as number;
    const uses = out.referenceLines as number;
    const total = `${out.referenceFilesOver ? 'over ' : ''}${files} file${files === 1 ? '' : 's'}, ${uses} line${uses === 1 ? '' : 's'} in all`;
    lines.push(
      `references: ${total}${offset > 0 || refs.length < files ? ` (${span})` : ''}`,
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
