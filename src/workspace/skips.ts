// Why the walk leaves a file out, in words for people: apart from the walk, so that a face prints them without it.

export type SkipReason =
  | 'too-large'
  | 'secret'
  | 'symlink'
  | 'hard-link'
  | 'special'
  | 'unreadable'
  | 'bad-name';

/** Why each reason is one, for people (`quarry files`, `quarry index`'s notes). */
export const SKIP_REASONS: Record<SkipReason, string> = {
  'too-large': 'over the size limit (max_file_bytes, --max-file-size)',
  secret: 'a secret-looking name (--include-secrets to index it)',
  symlink: 'a symbolic link (never followed)',
  'hard-link':
    'a hard link: its other names may be outside the project (include_hard_links = true to index it)',
  special: 'not a regular file (FIFO, socket, device)',
  unreadable: 'cannot be read',
  'bad-name': 'its name is not valid UTF-8 (rename it)',
};
