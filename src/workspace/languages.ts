import { QuarryError } from '../errors.ts';

/** Language detection by file name. `grammar` names a tree-sitter-wasms grammar when quarry can parse it. */
export interface LanguageInfo {
  id: string;
  grammar?: string;
}

const BY_EXTENSION: Record<string, LanguageInfo> = {};
function add(id: string, grammar: string | undefined, exts: string[]): void {
  for (const e of exts) BY_EXTENSION[e] = grammar ? { id, grammar } : { id };
}

add('typescript', 'typescript', ['.ts', '.mts', '.cts']);
add('tsx', 'tsx', ['.tsx']);
add('javascript', 'javascript', ['.js', '.mjs', '.cjs', '.jsx']);
add('python', 'python', ['.py', '.pyi', '.pyw']);
add('go', 'go', ['.go']);
add('rust', 'rust', ['.rs']);
add('java', 'java', ['.java']);
add('c', 'c', ['.c', '.h']);
add('cpp', 'cpp', ['.cc', '.cpp', '.cxx', '.c++', '.hh', '.hpp', '.hxx', '.h++', '.ipp', '.inl']);
add('csharp', 'c_sharp', ['.cs']);
add('ruby', 'ruby', ['.rb', '.rake', '.gemspec']);
add('php', 'php', ['.php', '.phtml']);
add('kotlin', 'kotlin', ['.kt', '.kts']);
add('swift', 'swift', ['.swift']);
add('scala', 'scala', ['.scala', '.sc']);
add('bash', 'bash', ['.sh', '.bash', '.zsh']);
add('lua', 'lua', ['.lua']);
add('dart', 'dart', ['.dart']);
add('elixir', 'elixir', ['.ex', '.exs']);
add('zig', 'zig', ['.zig']);
add('ocaml', 'ocaml', ['.ml', '.mli']);
add('solidity', 'solidity', ['.sol']);
add('objc', 'objc', ['.m', '.mm']);
add('elm', 'elm', ['.elm']);
add('vue', undefined, ['.vue']);
add('svelte', undefined, ['.svelte']);
add('html', undefined, ['.html', '.htm']);
add('css', undefined, ['.css', '.scss', '.sass', '.less']);
add('json', undefined, ['.json', '.jsonc', '.json5']);
add('yaml', undefined, ['.yaml', '.yml']);
add('toml', undefined, ['.toml']);
add('markdown', undefined, ['.md', '.mdx', '.markdown', '.rst', '.adoc']);
add('sql', undefined, ['.sql']);
add('proto', undefined, ['.proto']);
add('graphql', undefined, ['.graphql', '.gql']);
add('haskell', undefined, ['.hs']);
add('r', undefined, ['.r']);
add('perl', undefined, ['.pl', '.pm']);
add('text', undefined, ['.txt']);

const BY_NAME: Record<string, LanguageInfo> = {
  makefile: { id: 'make' },
  dockerfile: { id: 'dockerfile' },
  gemfile: { id: 'ruby', grammar: 'ruby' },
  rakefile: { id: 'ruby', grammar: 'ruby' },
  'cmakelists.txt': { id: 'cmake' },
};

/** The language of `path` (by extension, or whole file name); `text` for anything else that is text. */
export function detectLanguage(path: string): LanguageInfo {
  const base = path.slice(path.lastIndexOf('/') + 1).toLowerCase();
  // own keys only: a file named `constructor` or `x.__proto__` must not find Object.prototype's members
  if (Object.hasOwn(BY_NAME, base)) return BY_NAME[base]!;
  const dot = base.lastIndexOf('.');
  if (dot > 0) {
    const ext = base.slice(dot);
    if (Object.hasOwn(BY_EXTENSION, ext)) return BY_EXTENSION[ext]!;
  }
  return { id: 'text' };
}

/**
 * A line a C++ header has and a C header does not: a template, a namespace block, a class definition, an access
 * specifier, an `enum class`, a `using` declaration or alias, a `= default` or `= delete`, or anything from `std::`.
 * Read on the whole text, once a file, so every part runs in time linear in a line's length (a class line is one
 * `[^…]*` run, not a name and then a run that also matches the name: that was quadratic on a long line).
 */
const CPP_HEADER =
  /^[ \t]*(?:template[ \t]*<|namespace\b[^;\n]*\{|class[ \t]+[A-Za-z_][^;=()\n]*$|(?:public|private|protected)[ \t]*:(?!:)|enum[ \t]+class\b|using[ \t]+(?:namespace\b|[A-Za-z_]\w*[ \t]*=))|\bstd::[A-Za-z_]|=[ \t]*(?:default|delete)[ \t]*;/m;

/**
 * The grammar that parses `text` of `path`: its language's, except that a `.h` header written in C++ is parsed as
 * C++. Both languages name their headers `.h`, and the C grammar gives a C++ header an error tree without its
 * classes or namespaces (226 of the 229 C++ headers in a sample of the 100k corpus). The index records such a file's
 * language as `cpp` too (languageOf), so `--lang cpp` finds C++ headers and `--lang c` leaves them out.
 */
export function grammarFor(path: string, text: string): string | undefined {
  const { grammar } = detectLanguage(path);
  if (grammar === 'c' && isHeader(path) && CPP_HEADER.test(text)) return 'cpp';
  return grammar;
}

const isHeader = (path: string) => path.toLowerCase().endsWith('.h');

/**
 * The language the index records for a file of `path` that `grammar` (grammarFor's answer for its text) parses: its
 * name's, but `cpp` for a C++ header named `.h`.
 */
export function languageOf(path: string, grammar: string | undefined): string {
  const { id } = detectLanguage(path);
  return id === 'c' && grammar === 'cpp' ? 'cpp' : id;
}

/**
 * The languages a file may be in by its name alone: `.h` names a C or a C++ header (as ripgrep's types `c` and `cpp`
 * both take it), and only its text, or the language the index recorded from it, tells which.
 */
export function pathLanguages(path: string): string[] {
  const { id } = detectLanguage(path);
  return id === 'c' && isHeader(path) ? ['c', 'cpp'] : [id];
}

/** Languages whose chunks come from tree-sitter definitions. */
export function parsedLanguages(): string[] {
  return [...new Set(Object.values(BY_EXTENSION).flatMap((l) => (l.grammar ? [l.id] : [])))];
}

/** Every language id quarry detects (what `--lang` and grep's `-t` accept). */
export function languageIds(): string[] {
  return [
    ...new Set([...Object.values(BY_EXTENSION), ...Object.values(BY_NAME)].map((l) => l.id)),
    'text',
  ].sort();
}

/** ripgrep's type names for quarry's languages. */
const TYPE_ALIASES: Record<string, string[]> = {
  py: ['python'],
  ts: ['typescript', 'tsx'],
  js: ['javascript'],
  rs: ['rust'],
  rb: ['ruby'],
  cs: ['csharp'],
  sh: ['bash'],
  kt: ['kotlin'],
  md: ['markdown'],
  cc: ['cpp'],
  'c++': ['cpp'],
  yml: ['yaml'],
  hs: ['haskell'],
  ex: ['elixir'],
  ml: ['ocaml'],
};

/** The languages grep's `-t` names: a ripgrep type name or one of `known`; anything else is BAD_INPUT. */
export function typeLanguages(type: string, known: readonly string[]): string[] {
  const t = type.toLowerCase();
  if (TYPE_ALIASES[t]) return TYPE_ALIASES[t];
  if (known.includes(t)) return [t];
  throw new QuarryError(
    'BAD_INPUT',
    `unknown file type "${type}": use a language (${known.slice(0, 12).join(', ')}, …) or ${Object.keys(TYPE_ALIASES).join(', ')}`,
  );
}
