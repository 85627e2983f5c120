/**
 * Version control's folders and quarry's own: never walked, whatever the rules say (also under `--no-ignore`). A
 * linked worktree's `.git` is a file naming its git folder.
 */
export const VERSION_CONTROL_IGNORES: readonly string[] = [
  '.git/',
  '.git',
  '.hg/',
  '.svn/',
  '.bzr/',
  '.jj/',
  '_darcs/',
  '.quarry/',
];

/**
 * Ignores that apply before any `.gitignore`: version-control folders, dependencies, build outputs, vendored code,
 * lock files, minified bundles, media, archives and compiled binaries. A `.quarryignore` can re-include any of
 * them with a negation (`!vendor/`).
 */
export const DEFAULT_IGNORES: readonly string[] = [
  ...VERSION_CONTROL_IGNORES,
  // dependencies and vendored code
  'node_modules/',
  'bower_components/',
  'jspm_packages/',
  'vendor/',
  'third_party/',
  '.venv/',
  'venv/',
  'site-packages/',
  'Pods/',
  // build outputs and caches
  'dist/',
  'build/',
  'out/',
  'target/',
  'obj/',
  '.next/',
  '.nuxt/',
  '.svelte-kit/',
  '.turbo/',
  '.parcel-cache/',
  '.cache/',
  'coverage/',
  '.nyc_output/',
  '__pycache__/',
  '.pytest_cache/',
  '.mypy_cache/',
  '.ruff_cache/',
  '.tox/',
  '.gradle/',
  '.idea/',
  '.eggs/',
  '*.egg-info/',
  // lock files
  '*.lock',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'pnpm-lock.yaml',
  'go.sum',
  'bun.lockb',
  // minified and generated bundles
  '*.min.js',
  '*.min.css',
  '*.min.mjs',
  '*.map',
  '*.bundle.js',
  '*.chunk.js',
  // media
  '*.png',
  '*.jpg',
  '*.jpeg',
  '*.gif',
  '*.bmp',
  '*.ico',
  '*.icns',
  '*.webp',
  '*.avif',
  '*.tif',
  '*.tiff',
  '*.psd',
  '*.svg',
  '*.pdf',
  '*.mp3',
  '*.mp4',
  '*.m4a',
  '*.mov',
  '*.avi',
  '*.mkv',
  '*.webm',
  '*.wav',
  '*.ogg',
  '*.flac',
  '*.woff',
  '*.woff2',
  '*.ttf',
  '*.otf',
  '*.eot',
  // archives
  '*.zip',
  '*.tar',
  '*.gz',
  '*.tgz',
  '*.bz2',
  '*.xz',
  '*.zst',
  '*.7z',
  '*.rar',
  '*.jar',
  '*.war',
  '*.whl',
  '*.egg',
  '*.deb',
  '*.rpm',
  '*.dmg',
  '*.iso',
  // compiled and binary data
  '*.exe',
  '*.dll',
  '*.so',
  '*.dylib',
  '*.o',
  '*.obj',
  '*.a',
  '*.lib',
  '*.class',
  '*.pyc',
  '*.pyo',
  '*.wasm',
  '*.node',
  '*.bin',
  '*.db',
  '*.sqlite',
  '*.sqlite3',
  '*.parquet',
  '*.npy',
  '*.npz',
  '*.pkl',
  '*.onnx',
  '*.pt',
  '*.safetensors',
];

/** File names that look like secrets. Never indexed unless the user opts in (`include_secrets`). */
const SECRET_NAMES = new Set([
  '.netrc',
  '_netrc',
  '.pgpass',
  '.npmrc',
  '.pypirc',
  '.git-credentials',
  '.htpasswd',
  '.dockercfg',
  'credentials',
  'credentials.json',
  'credentials.yml',
  'credentials.yaml',
  'credentials.xml',
  'secrets.json',
  'secrets.yml',
  'secrets.yaml',
  'secrets.toml',
  'id_rsa',
  'id_dsa',
  'id_ecdsa',
  'id_ed25519',
]);
const SECRET_EXTENSIONS = /\.(pem|key|p12|pfx|jks|keystore|ppk|kdbx|asc|gpg|p8|der|crt)$/i;
const SAFE_ENV_SUFFIX = /\.(example|sample|template|dist|defaults)$/i;

/** Credentials known by where they live, not by their name alone (`config` is a common name). */
const SECRET_PATHS =
  /(^|\/)(\.kube\/config|\.docker\/config\.json|\.aws\/(credentials|config)|\.azure\/[^/]+\.json|\.config\/gcloud\/[^/]+\.(json|db))$/i;
/** Terraform state holds every resource's attributes, passwords included; kubeconfigs hold cluster tokens. */
const SECRET_SUFFIXES = /(\.tfstate|\.tfstate\.backup|\.kubeconfig|^kubeconfig(\.ya?ml)?)$/i;

/** True when a repository-relative path looks like it holds secrets: by its name, or by where it lives. */
export function looksLikeSecretPath(rel: string): boolean {
  const name = rel.slice(rel.lastIndexOf('/') + 1);
  return looksLikeSecretName(name) || SECRET_PATHS.test(rel) || SECRET_SUFFIXES.test(name);
}

/** True when a file name looks like it holds secrets. */
export function looksLikeSecretName(basename: string): boolean {
  const lower = basename.toLowerCase();
  if (lower === '.env' || lower.startsWith('.env.') || lower.endsWith('.env'))
    return !SAFE_ENV_SUFFIX.test(lower);
  if (SECRET_NAMES.has(lower)) return true;
  if (/^id_(rsa|dsa|ecdsa|ed25519)(?!\.pub$)/.test(lower)) return true;
  if (/^service[-_]?account.*\.json$/.test(lower)) return true;
  return SECRET_EXTENSIONS.test(lower);
}

const PRIVATE_KEY = /-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----/;

/** True when text contains a private key block (checked on content, whatever the file's name). */
export function containsPrivateKey(text: string): boolean {
  return PRIVATE_KEY.test(text);
}

/**
 * The rules above as one text: a walk's remembered folders (memo.ts) are kept under it, so that a quarry whose
 * defaults or secret names changed lists every folder again instead of trusting decisions made under the old ones.
 */
export function rulesText(): string {
  return JSON.stringify([
    VERSION_CONTROL_IGNORES,
    DEFAULT_IGNORES,
    [...SECRET_NAMES],
    [SECRET_EXTENSIONS, SAFE_ENV_SUFFIX, SECRET_PATHS, SECRET_SUFFIXES].map(String),
    String(looksLikeSecretName),
    String(looksLikeSecretPath),
  ]);
}
