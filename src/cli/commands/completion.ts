import type { Command } from 'commander';
import { QuarryError } from '../../errors.ts';
import type { CliContext } from '../context.ts';

export function registerCompletion(program: Command, cli: CliContext): void {
  program
    .command('completion')
    .description('print a shell completion script: eval "$(quarry completion bash)" (or zsh, fish)')
    .argument('[shell]', 'bash, zsh or fish', 'bash')
    .action((shell: string) => runCompletion(cli, program, shell));
}

export function runCompletion(cli: CliContext, program: Command, shell: string): void {
  cli.io.stdout.write(completionScript(program, shell));
}

/** Completion scripts built from the command tree, so they never fall behind the commands. */
export function completionScript(program: Command, shell: string): string {
  const commands = program.commands.filter((c) => c.name() !== 'help');
  const globals = program.options.map((o) => o.long).filter(Boolean) as string[];
  const optsOf = (c: Command) => [
    ...(c.options.map((o) => o.long).filter(Boolean) as string[]),
    ...globals,
    '--help',
  ];
  const names = commands.map((c) => c.name());
  switch (shell) {
    case 'bash': {
      const cases = commands
        .map((c) => {
          const subs = c.commands.map((s) => s.name()).join(' ');
          return `    ${c.name()}) words="${[subs, ...optsOf(c)].filter(Boolean).join(' ')}" ;;`;
        })
        .join('\n');
      return `# quarry completion for bash: eval "$(quarry completion bash)" in ~/.bashrc
_quarry() {
  local cur=\${COMP_WORDS[COMP_CWORD]} cmd=\${COMP_WORDS[1]} words
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${names.join(' ')} ${globals.join(' ')} --help" -- "$cur"))
    return
  fi
  case "$cmd" in
${cases}
    *) words="${globals.join(' ')}" ;;
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$words" -- "$cur"));
  else COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -- "$cur")); fi
}
complete -o filenames -F _quarry quarry
`;
    }
    case 'zsh': {
      const described = commands
        .map(
          (c) =>
            `    '${c.name()}:${c.description().replace(/'/g, "'\\''").replace(/:/g, '\\:').slice(0, 70)}'`,
        )
        .join('\n');
      const cases = commands
        .map(
          (c) =>
            `    ${c.name()}) _values 'option' ${optsOf(c)
              .map((o) => `'${o}'`)
              .join(' ')} ;;`,
        )
        .join('\n');
      return `#compdef quarry
# quarry completion for zsh: eval "$(quarry completion zsh)" in ~/.zshrc (after compinit)
_quarry() {
  local -a commands
  commands=(
${described}
  )
  if (( CURRENT == 2 )); then _describe 'command' commands; return; fi
  case "$words[2]" in
${cases}
  esac
  _files
}
compdef _quarry quarry
`;
    }
    case 'fish': {
      const lines = [
        `# quarry completion for fish: quarry completion fish > ~/.config/fish/completions/quarry.fish`,
        'complete -c quarry -f',
      ];
      for (const c of commands) {
        lines.push(
          `complete -c quarry -n __fish_use_subcommand -a ${c.name()} -d '${c.description().replace(/'/g, "\\'").slice(0, 70)}'`,
        );
        for (const o of c.options)
          if (o.long)
            lines.push(
              `complete -c quarry -n '__fish_seen_subcommand_from ${c.name()}' -l ${o.long.slice(2)} -d '${o.description.replace(/'/g, "\\'").slice(0, 60)}'`,
            );
      }
      for (const o of program.options)
        if (o.long)
          lines.push(
            `complete -c quarry -l ${o.long.slice(2)} -d '${o.description.replace(/'/g, "\\'").slice(0, 60)}'`,
          );
      return `${lines.join('\n')}\n`;
    }
    default:
      throw new QuarryError('BAD_INPUT', `no completion for "${shell}": use bash, zsh or fish`);
  }
}
