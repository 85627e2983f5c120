import { z } from 'zod';
import { pageOf } from '../../host/pages.ts';
import {
  type Answer,
  defineTool,
  numbered,
  READ_ONLY,
  repoArg,
  rootArg,
  type ToolContext,
} from '../common.ts';

const inputSchema = {
  path: z.string().min(1).describe('From the repository root'),
  start: z.number().int().min(1).default(1),
  end: z.number().int().min(1).optional(),
  column: z
    .number()
    .int()
    .min(1)
    .default(1)
    .describe(
      'Where in the start line to begin (a long line is read in pieces; the answer says where to go on)',
    ),
  repo: repoArg,
  root: rootArg,
};

/** Characters of file text one read_file answer carries at most. */
const PAGE_CHARS = 20_000;

/** read_file: numbered lines of an indexed file, at most 2,000 (and 20,000 characters) per call, with how to read on. */
export async function readFile(
  { path, start, end, column, repo, root }: z.infer<z.ZodObject<typeof inputSchema>>,
  { projectOf }: ToolContext,
): Promise<Answer> {
  const project = await projectOf(repo, root);
  // what an agent reads goes to its model: secrets inside the file come replaced, line for line (the set's view)
  const asked = await project.readFile(path, {
    start,
    end: Math.min(end ?? start + 1999, start + 1999),
  });
  // a page is also at most PAGE_CHARS characters (a minified or generated file's long lines add up fast): a line
  // longer than that is read in pieces
  const page = pageOf(asked.start, asked.lines, column, PAGE_CHARS);
  const slice = { ...asked, lines: page.lines, end: page.end };
  const body = numbered(slice.start, slice.lines);
  const more = page.nextColumn
    ? `\n… line ${page.end} goes on: call again with start ${page.end} and column ${page.nextColumn}`
    : slice.end < slice.total
      ? `\n… lines ${slice.end + 1}-${slice.total} remain: call again with start ${slice.end + 1}`
      : '';
  return {
    text: `${slice.path}:${slice.start}-${slice.end} of ${slice.total}\n${body}${more}`,
    data: {
      path: slice.path,
      start: slice.start,
      end: slice.end,
      total: slice.total,
      lines: slice.lines,
      ...(column > 1 ? { column } : {}),
      ...(page.nextColumn ? { nextColumn: page.nextColumn } : {}),
    },
  };
}

export const readFileTool = defineTool({
  name: 'read_file',
  title: 'Read an indexed file',
  description:
    'Numbered lines of an indexed file, start to end (at most 2,000 lines and 20,000 characters per call, a longer line in pieces; the answer says where to read on).',
  inputSchema,
  annotations: READ_ONLY,
  handler: readFile,
});
