//! Man pages and shell completions made from a binary's clap definition,
//! for `make install`: `BINARY --generate-man` and `BINARY
//! --generate-completions SHELL` (hidden: not part of the definition, so
//! they are looked for before clap parses the command line).

/// `--generate-man` or `--generate-completions SHELL` as the only
/// arguments (hidden; `make install` uses them): prints the man page or
/// the shell completion script made from the command-line definition.
pub fn generate<C: clap::CommandFactory>() -> Option<i32> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cmd = C::command();
    let name = cmd.get_name().to_string();
    let mut buf = Vec::new();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--generate-man"] => clap_mangen::Man::new(cmd)
            .render(&mut buf)
            .expect("writing to memory"),
        ["--generate-completions", shell] => match shell.parse::<clap_complete::Shell>() {
            Ok(sh) => clap_complete::generate(sh, &mut cmd, name.clone(), &mut buf),
            Err(_) => {
                eprintln!("{name}: --generate-completions: bash, zsh, fish, elvish or powershell");
                return Some(2);
            }
        },
        _ => return None,
    }
    match std::io::Write::write_all(&mut std::io::stdout(), &buf) {
        Ok(()) => Some(0),
        Err(e) => {
            eprintln!("{name}: {e}");
            Some(1)
        }
    }
}
