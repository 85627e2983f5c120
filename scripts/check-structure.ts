/**
 * The size rules of docs/architecture.md, checked by the test command: no source file in src/ over 700 lines, no
 * function over 150 lines, and none in the faces (cli/, server/, mcp/) over 100. A function is a declaration, a method, an arrow or a function
 * expression; its lines are counted from its first line to its last, nested functions included.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = join(import.meta.dirname, '..');
const SRC = join(ROOT, 'src');
const CORE_LIMIT = 150;
const FACE_LIMIT = 100;
const FACES = ['cli/', 'server/', 'mcp/'];
/** A file holds one concern: past this many lines it holds several (split it by concern, as store/sqlite/ is). */
const FILE_LIMIT = 700;

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function nameOf(node: ts.Node, sf: ts.SourceFile): string {
  const n = (node as { name?: ts.Node }).name;
  if (n) return n.getText(sf);
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  if (parent && ts.isCallExpression(parent)) return `callback of ${parent.expression.getText(sf).replace(/\s+/g, '').slice(-40)}`;
  return '(anonymous)';
}

const offenders: string[] = [];
const all: Array<{ where: string; lines: number }> = [];
for (const file of files(SRC)) {
  const rel = relative(SRC, file);
  const limit = FACES.some((f) => rel.startsWith(f)) ? FACE_LIMIT : CORE_LIMIT;
  const text = readFileSync(file, 'utf8');
  const fileLines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (fileLines > FILE_LIMIT) offenders.push(`src/${rel}: ${fileLines} lines in the file (limit ${FILE_LIMIT})`);
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as { body?: ts.Node }).body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      const where = `src/${rel}:${start + 1} ${nameOf(node, sf)}`;
      all.push({ where, lines });
      if (lines > limit) offenders.push(`${where}: ${lines} lines (limit ${limit})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

if (process.argv.includes('--top')) {
  for (const f of all.sort((a, b) => b.lines - a.lines).slice(0, 40)) console.log(`${f.lines}\t${f.where}`);
}
if (offenders.length) {
  console.error(`structure: ${offenders.length} file(s) or function(s) over their limit:\n  ${offenders.join('\n  ')}`);
  process.exit(1);
}
console.log(
  `structure: no file over ${FILE_LIMIT} lines; ${all.length} functions, none over ${CORE_LIMIT} lines (${FACE_LIMIT} in cli/, server/, mcp/)`,
);
