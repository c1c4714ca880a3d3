//! Tokens of Filebench's Workload Model Language. Newlines are significant (they end a
//! statement); `#` starts a comment that runs to the end of the line. Every token carries the
//! line and column where it starts so errors can point at it.

use std::fmt;

/// A place in a workload file (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A bare word: keyword, attribute name, identifier, path, `mean:1;gamma:1.5`.
    Word(String),
    /// `$name` or `${name}` (the name without `$` and braces).
    Var(String),
    /// A number with an optional k/m/g/t suffix already applied.
    Num(f64),
    /// A double-quoted string, escapes resolved, `$var` references kept for interpolation.
    Str(String),
    LBrace,
    RBrace,
    LParen,
    RParen,
    Eq,
    Comma,
    Newline,
    Eof,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Word(w) => write!(f, "'{}'", shown(w)),
            Tok::Var(v) => write!(f, "'${v}'"),
            Tok::Num(n) => write!(f, "number {n}"),
            Tok::Str(_) => f.write_str("a quoted string"),
            Tok::LBrace => f.write_str("'{'"),
            Tok::RBrace => f.write_str("'}'"),
            Tok::LParen => f.write_str("'('"),
            Tok::RParen => f.write_str("')'"),
            Tok::Eq => f.write_str("'='"),
            Tok::Comma => f.write_str("','"),
            Tok::Newline => f.write_str("end of line"),
            Tok::Eof => f.write_str("end of file"),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub pos: Pos,
}

/// A lexing or parsing error at a position; the caller adds the file name.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    pub pos: Pos,
    pub msg: String,
}

/// User text (a string, a `-D` value, a name) as an error message shows it: control
/// characters escaped (`\n`, `\u{1}`), so the message stays one line whatever the text holds.
pub fn shown(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    out
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '_' | '/' | '.' | '-')
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '.' | '-' | ':' | ';' | '+')
}

fn suffix_mult(c: char) -> Option<f64> {
    Some(match c.to_ascii_lowercase() {
        'k' => 1024.0,
        'm' => 1024.0 * 1024.0,
        'g' => 1024.0 * 1024.0 * 1024.0,
        't' => 1024.0f64.powi(4),
        _ => return None,
    })
}

/// Split a whole file into tokens.
pub fn lex(src: &str) -> Result<Vec<Token>, SyntaxError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    let err = |line, col, msg: String| SyntaxError {
        pos: Pos { line, col },
        msg,
    };
    while i < chars.len() {
        let c = chars[i];
        let pos = Pos { line, col };
        let mut push = |t: Tok| out.push(Token { tok: t, pos });
        if c == '\n' {
            push(Tok::Newline);
            i += 1;
            line += 1;
            col = 1;
            continue;
        }
        if c == ' ' || c == '\t' || c == '\r' {
            i += 1;
            col += 1;
            continue;
        }
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
                col += 1;
            }
            continue;
        }
        let single = match c {
            '{' => Some(Tok::LBrace),
            '}' => Some(Tok::RBrace),
            '(' => Some(Tok::LParen),
            ')' => Some(Tok::RParen),
            '=' => Some(Tok::Eq),
            ',' => Some(Tok::Comma),
            _ => None,
        };
        if let Some(t) = single {
            push(t);
            i += 1;
            col += 1;
            continue;
        }
        if c == '"' {
            let mut s = String::new();
            i += 1;
            col += 1;
            loop {
                let Some(&ch) = chars.get(i) else {
                    return Err(err(
                        pos.line,
                        pos.col,
                        "unterminated string: expected a closing '\"'".into(),
                    ));
                };
                i += 1;
                col += 1;
                match ch {
                    '"' => break,
                    '\n' => {
                        return Err(err(
                            pos.line,
                            pos.col,
                            "unterminated string: a string must end on the line it starts".into(),
                        ))
                    }
                    '\\' => {
                        let Some(&e) = chars.get(i) else { continue };
                        i += 1;
                        col += 1;
                        match e {
                            'n' => s.push('\n'),
                            't' => s.push('\t'),
                            '\n' => {
                                return Err(err(
                                    line,
                                    col,
                                    "unterminated string: a string must end on the line it starts"
                                        .into(),
                                ))
                            }
                            other => s.push(other),
                        }
                    }
                    other => s.push(other),
                }
            }
            push(Tok::Str(s));
            continue;
        }
        if c == '$' {
            let start = i;
            i += 1;
            let braced = chars.get(i) == Some(&'{');
            if braced {
                i += 1;
            }
            let name_start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            if i == name_start || !chars[name_start].is_ascii_alphabetic() {
                return Err(err(
                    line,
                    col,
                    "expected a variable name after '$' (a letter, then letters, digits or '_')"
                        .into(),
                ));
            }
            let name: String = chars[name_start..i].iter().collect();
            if braced {
                if chars.get(i) != Some(&'}') {
                    return Err(err(
                        line,
                        col,
                        format!("expected '}}' to close '${{{name}'"),
                    ));
                }
                i += 1;
            }
            col += (i - start) as u32;
            out.push(Token {
                tok: Tok::Var(name),
                pos,
            });
            continue;
        }
        if c.is_ascii_digit() || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            let Ok(mut n) = text.parse::<f64>() else {
                return Err(err(
                    line,
                    col,
                    format!("bad number '{text}': expected digits with at most one '.'"),
                ));
            };
            if let Some(m) = chars.get(i).and_then(|&c| suffix_mult(c)) {
                // A suffix only when it ends the number (so `1mean` is not 1 MiB followed by `ean`).
                if !chars.get(i + 1).is_some_and(|&c| is_word_char(c)) {
                    n *= m;
                    i += 1;
                }
            }
            if chars.get(i).is_some_and(|&c| is_word_char(c)) {
                let mut j = i;
                while j < chars.len() && is_word_char(chars[j]) {
                    j += 1;
                }
                let bad: String = chars[start..j].iter().collect();
                return Err(err(
                    line,
                    col,
                    format!(
                        "bad number '{bad}': expected digits with an optional k, m, g or t suffix"
                    ),
                ));
            }
            col += (i - start) as u32;
            out.push(Token {
                tok: Tok::Num(n),
                pos,
            });
            continue;
        }
        if is_word_start(c) {
            let start = i;
            while i < chars.len() && is_word_char(chars[i]) {
                i += 1;
            }
            col += (i - start) as u32;
            out.push(Token {
                tok: Tok::Word(chars[start..i].iter().collect()),
                pos,
            });
            continue;
        }
        return Err(err(line, col, format!("unexpected character {c:?}")));
    }
    out.push(Token {
        tok: Tok::Eof,
        pos: Pos { line, col },
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_positions() {
        let t = lex("set $nfiles=10k # c\nflowop read name=r1,iosize=2m").unwrap();
        assert_eq!(t[0].tok, Tok::Word("set".into()));
        assert_eq!(t[1].tok, Tok::Var("nfiles".into()));
        assert_eq!(t[1].pos, Pos { line: 1, col: 5 });
        assert_eq!(t[3].tok, Tok::Num(10240.0));
        assert_eq!(t[4].tok, Tok::Newline);
        assert_eq!(t[5].pos, Pos { line: 2, col: 1 });
        assert_eq!(t.iter().filter(|t| t.tok == Tok::Num(2097152.0)).count(), 1);
    }

    #[test]
    fn params_word_and_strings() {
        let t = lex("parameters=mean:16384;gamma:1.5 echo \"a $x\\n\"").unwrap();
        assert_eq!(t[2].tok, Tok::Word("mean:16384;gamma:1.5".into()));
        assert_eq!(t[4].tok, Tok::Str("a $x\n".into()));
    }

    #[test]
    fn errors_have_positions() {
        let e = lex("set $a=1\n  echo \"open").unwrap_err();
        assert_eq!(e.pos, Pos { line: 2, col: 8 });
        let e = lex("set $=1").unwrap_err();
        assert_eq!(e.pos.col, 5);
        assert!(lex("iosize=12q").is_err());
    }
}
