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
    let mut lx = Lexer {
        chars: src.chars().collect(),
        out: Vec::new(),
        i: 0,
        line: 1,
        col: 1,
    };
    while lx.i < lx.chars.len() {
        lx.next_token()?;
    }
    let pos = lx.pos();
    lx.out.push(Token { tok: Tok::Eof, pos });
    Ok(lx.out)
}

/// The lexer's state: the characters, where it is in them (index and line:column) and the
/// tokens found so far.
struct Lexer {
    chars: Vec<char>,
    out: Vec<Token>,
    i: usize,
    line: u32,
    col: u32,
}

impl Lexer {
    /// The current position.
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }

    /// An error at `pos`.
    fn err(pos: Pos, msg: impl Into<String>) -> SyntaxError {
        SyntaxError {
            pos,
            msg: msg.into(),
        }
    }

    /// Record a token that starts at `pos`.
    fn push(&mut self, tok: Tok, pos: Pos) {
        self.out.push(Token { tok, pos });
    }

    /// Step over one character on the current line.
    fn advance(&mut self) {
        self.i += 1;
        self.col += 1;
    }

    /// Consume whatever starts at the current character: a newline, blank or comment (skipped),
    /// or one token.
    fn next_token(&mut self) -> Result<(), SyntaxError> {
        let c = self.chars[self.i];
        let pos = self.pos();
        match c {
            '\n' => {
                self.push(Tok::Newline, pos);
                self.i += 1;
                self.line += 1;
                self.col = 1;
            }
            ' ' | '\t' | '\r' => self.advance(),
            '#' => {
                while self.i < self.chars.len() && self.chars[self.i] != '\n' {
                    self.advance();
                }
            }
            '{' | '}' | '(' | ')' | '=' | ',' => {
                let t = match c {
                    '{' => Tok::LBrace,
                    '}' => Tok::RBrace,
                    '(' => Tok::LParen,
                    ')' => Tok::RParen,
                    '=' => Tok::Eq,
                    _ => Tok::Comma,
                };
                self.push(t, pos);
                self.advance();
            }
            '"' => self.string(pos)?,
            '$' => self.var(pos)?,
            _ if c.is_ascii_digit()
                || (c == '-'
                    && self
                        .chars
                        .get(self.i + 1)
                        .is_some_and(|d| d.is_ascii_digit())) =>
            {
                self.number(pos)?
            }
            _ if is_word_start(c) => self.word(pos),
            _ => return Err(Self::err(pos, format!("unexpected character {c:?}"))),
        }
        Ok(())
    }

    /// A double-quoted string starting at `pos`: resolve `\n`, `\t` and `\x` escapes; it must
    /// end on the line where it starts.
    fn string(&mut self, pos: Pos) -> Result<(), SyntaxError> {
        const ONE_LINE: &str = "unterminated string: a string must end on the line it starts";
        let mut s = String::new();
        self.advance();
        loop {
            let Some(&ch) = self.chars.get(self.i) else {
                return Err(Self::err(
                    pos,
                    "unterminated string: expected a closing '\"'",
                ));
            };
            self.advance();
            match ch {
                '"' => break,
                '\n' => return Err(Self::err(pos, ONE_LINE)),
                '\\' => {
                    let Some(&e) = self.chars.get(self.i) else {
                        continue;
                    };
                    self.advance();
                    match e {
                        'n' => s.push('\n'),
                        't' => s.push('\t'),
                        // The error points just past the escaped line end.
                        '\n' => return Err(Self::err(self.pos(), ONE_LINE)),
                        other => s.push(other),
                    }
                }
                other => s.push(other),
            }
        }
        self.push(Tok::Str(s), pos);
        Ok(())
    }

    /// A variable reference `$name` or `${name}` starting at `pos`.
    fn var(&mut self, pos: Pos) -> Result<(), SyntaxError> {
        let chars = &self.chars;
        let start = self.i;
        let mut i = start + 1;
        let braced = chars.get(i) == Some(&'{');
        if braced {
            i += 1;
        }
        let name_start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
            i += 1;
        }
        if i == name_start || !chars[name_start].is_ascii_alphabetic() {
            return Err(Self::err(
                pos,
                "expected a variable name after '$' (a letter, then letters, digits or '_')",
            ));
        }
        let name: String = chars[name_start..i].iter().collect();
        if braced {
            if chars.get(i) != Some(&'}') {
                return Err(Self::err(
                    pos,
                    format!("expected '}}' to close '${{{name}'"),
                ));
            }
            i += 1;
        }
        self.finish(start, i, Tok::Var(name), pos);
        Ok(())
    }

    /// A number starting at `pos`, with an optional k/m/g/t suffix applied; a word character
    /// right after it makes it a bad number.
    fn number(&mut self, pos: Pos) -> Result<(), SyntaxError> {
        let chars = &self.chars;
        let start = self.i;
        let mut i = start + 1;
        while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
            i += 1;
        }
        let text: String = chars[start..i].iter().collect();
        let Ok(mut n) = text.parse::<f64>() else {
            return Err(Self::err(
                pos,
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
            return Err(Self::err(
                pos,
                format!("bad number '{bad}': expected digits with an optional k, m, g or t suffix"),
            ));
        }
        self.finish(start, i, Tok::Num(n), pos);
        Ok(())
    }

    /// A bare word starting at `pos`.
    fn word(&mut self, pos: Pos) {
        let start = self.i;
        let mut i = start;
        while i < self.chars.len() && is_word_char(self.chars[i]) {
            i += 1;
        }
        let w: String = self.chars[start..i].iter().collect();
        self.finish(start, i, Tok::Word(w), pos);
    }

    /// Record a token that spans `start..end` on one line and move past it.
    fn finish(&mut self, start: usize, end: usize, tok: Tok, pos: Pos) {
        self.i = end;
        self.col += (end - start) as u32;
        self.push(tok, pos);
    }
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

    /// Every lexer error, its message and position (pinned so a restructuring of `lex` keeps
    /// them byte for byte).
    #[test]
    fn every_error_message_and_position() {
        let cases: &[(&str, (u32, u32), &str)] = &[
            (
                "a \"x",
                (1, 3),
                "unterminated string: expected a closing '\"'",
            ),
            (
                "a\n \"x\ny\"",
                (2, 2),
                "unterminated string: a string must end on the line it starts",
            ),
            (
                "\"ab\\\nc\"",
                (1, 6),
                "unterminated string: a string must end on the line it starts",
            ),
            (
                "\"ab\\",
                (1, 1),
                "unterminated string: expected a closing '\"'",
            ),
            (
                "x $1",
                (1, 3),
                "expected a variable name after '$' (a letter, then letters, digits or '_')",
            ),
            (
                "x ${",
                (1, 3),
                "expected a variable name after '$' (a letter, then letters, digits or '_')",
            ),
            ("\n  ${ab x", (2, 3), "expected '}' to close '${ab'"),
            (
                "n=1.2.3",
                (1, 3),
                "bad number '1.2.3': expected digits with at most one '.'",
            ),
            (
                "n=12q",
                (1, 3),
                "bad number '12q': expected digits with an optional k, m, g or t suffix",
            ),
            (
                "n=-4kb",
                (1, 3),
                "bad number '-4kb': expected digits with an optional k, m, g or t suffix",
            ),
            ("a\tb @", (1, 5), "unexpected character '@'"),
        ];
        for (src, (line, col), msg) in cases {
            let e = lex(src).unwrap_err();
            assert_eq!(
                (e.pos, e.msg.as_str()),
                (
                    Pos {
                        line: *line,
                        col: *col
                    },
                    *msg
                ),
                "{src:?}"
            );
        }
    }

    #[test]
    fn token_kinds_and_end_position() {
        let t = lex("{}(),= ${v} -3 4k \"q\\\"\\t\" w.x # c\n").unwrap();
        let toks: Vec<Tok> = t.iter().map(|t| t.tok.clone()).collect();
        assert_eq!(
            toks,
            vec![
                Tok::LBrace,
                Tok::RBrace,
                Tok::LParen,
                Tok::RParen,
                Tok::Comma,
                Tok::Eq,
                Tok::Var("v".into()),
                Tok::Num(-3.0),
                Tok::Num(4096.0),
                Tok::Str("q\"\t".into()),
                Tok::Word("w.x".into()),
                Tok::Newline,
                Tok::Eof,
            ]
        );
        let cols: Vec<u32> = t.iter().map(|t| t.pos.col).collect();
        assert_eq!(cols, vec![1, 2, 3, 4, 5, 6, 8, 13, 16, 19, 27, 34, 1]);
        assert_eq!(t.last().unwrap().pos.line, 2);
    }
}
