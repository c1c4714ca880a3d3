//! Recursive-descent parser for WML: tokens -> [`Stmt`]s. Newlines are not significant (as in
//! Filebench): a statement ends where the grammar says it does, so attribute lists may span
//! lines. Every error names the position of the offending token and what was expected.

use crate::ast::*;
use crate::lexer::{lex, Pos, SyntaxError, Tok, Token};

struct Parser {
    toks: Vec<Token>,
    at: usize,
}

type R<T> = Result<T, SyntaxError>;

/// Parse a whole workload file.
pub fn parse(src: &str) -> R<Vec<Stmt>> {
    let toks: Vec<Token> = lex(src)?
        .into_iter()
        .filter(|t| t.tok != Tok::Newline)
        .collect();
    let mut p = Parser { toks, at: 0 };
    let mut out = Vec::new();
    while p.peek() != &Tok::Eof {
        out.push(p.statement()?);
    }
    Ok(out)
}

fn fail<T>(pos: Pos, msg: impl Into<String>) -> R<T> {
    Err(SyntaxError {
        pos,
        msg: msg.into(),
    })
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].tok
    }
    fn pos(&self) -> Pos {
        self.toks[self.at].pos
    }
    fn next(&mut self) -> Token {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }
    fn expect(&mut self, want: Tok, what: &str) -> R<Pos> {
        let pos = self.pos();
        if *self.peek() == want {
            self.next();
            Ok(pos)
        } else {
            fail(pos, format!("expected {what}, found {}", self.peek()))
        }
    }
    fn word(&mut self, what: &str) -> R<(String, Pos)> {
        let pos = self.pos();
        match self.peek().clone() {
            Tok::Word(w) => {
                self.next();
                Ok((w, pos))
            }
            other => fail(pos, format!("expected {what}, found {other}")),
        }
    }

    fn statement(&mut self) -> R<Stmt> {
        let (kw, pos) = self.word(
            "a command (set, define, run, psrun, eventgen, enable, create, sleep, echo, quit)",
        )?;
        match kw.as_str() {
            "set" => self.set(pos),
            "define" => self.define(pos),
            "eventgen" => Ok(Stmt::Eventgen { attrs: self.attrs()?, pos }),
            "enable" => {
                let (what, _) = self.word("what to enable (lathist)")?;
                Ok(Stmt::Enable { what, pos })
            }
            "run" => {
                let secs = self.optional_value();
                Ok(Stmt::Run { secs, pos })
            }
            "psrun" => {
                let (negative, period) = match self.peek().clone() {
                    Tok::Num(n) if n < 0.0 => {
                        self.next();
                        (true, Some(Value::Num(-n)))
                    }
                    Tok::Word(w) if w == "-" => {
                        self.next();
                        (true, self.optional_value())
                    }
                    _ => (false, self.optional_value()),
                };
                let secs = if period.is_some() { self.optional_value() } else { None };
                Ok(Stmt::Psrun { period, negative, secs, pos })
            }
            "create" => {
                let (what, wpos) = self.word("'files' or 'processes'")?;
                if !matches!(what.as_str(), "files" | "fileset" | "filesets" | "processes") {
                    return fail(wpos, format!("expected 'files' or 'processes' after create, found '{what}'"));
                }
                Ok(Stmt::Create { what, pos })
            }
            "sleep" => {
                let vpos = self.pos();
                match self.optional_value() {
                    Some(secs) => Ok(Stmt::Sleep { secs, pos }),
                    None => fail(vpos, format!("expected a number of seconds after sleep, found {}", self.peek())),
                }
            }
            "echo" => {
                let vpos = self.pos();
                match self.next().tok {
                    Tok::Str(text) => Ok(Stmt::Echo { text, pos }),
                    other => fail(vpos, format!("expected a quoted string after echo, found {other}")),
                }
            }
            "system" => {
                let vpos = self.pos();
                match self.next().tok {
                    Tok::Str(cmd) => Ok(Stmt::System { cmd, pos }),
                    other => fail(vpos, format!("expected a quoted command after system, found {other}")),
                }
            }
            "usage" => {
                let vpos = self.pos();
                match self.next().tok {
                    Tok::Str(_) => Ok(Stmt::Ignored { what: kw, pos }),
                    other => fail(vpos, format!("expected a quoted string after {kw}, found {other}")),
                }
            }
            "debug" => {
                self.optional_value();
                Ok(Stmt::Ignored { what: kw, pos })
            }
            "version" | "list" => Ok(Stmt::Ignored { what: kw, pos }),
            "shutdown" => {
                self.word("what to shut down (processes)")?;
                Ok(Stmt::Ignored { what: kw, pos })
            }
            "quit" => Ok(Stmt::Quit { pos }),
            other => fail(pos, format!("unknown command '{other}': expected set, define, run, psrun, eventgen, enable, create, sleep, echo or quit")),
        }
    }

    /// A value if the next token can be one (number or variable).
    fn optional_value(&mut self) -> Option<Value> {
        match self.peek().clone() {
            Tok::Num(n) => {
                self.next();
                Some(Value::Num(n))
            }
            Tok::Var(v) => {
                self.next();
                Some(Value::Var(v))
            }
            _ => None,
        }
    }

    fn set(&mut self, pos: Pos) -> R<Stmt> {
        let vpos = self.pos();
        match self.next().tok {
            Tok::Var(var) => {
                self.expect(Tok::Eq, "'=' after the variable name")?;
                if let Tok::Word(w) = self.peek().clone() {
                    if w == "randvar" {
                        // Filebench 1.5: `set $x = randvar(type=..., min=..., ...)` is the
                        // same random variable as `define randvar name=$x, ...`.
                        let rpos = self.pos();
                        self.next();
                        self.expect(Tok::LParen, "'(' after randvar")?;
                        let mut attrs = self.attrs()?;
                        self.expect(Tok::RParen, "')' to close randvar(")?;
                        if attrs.iter().any(|a| a.name == "name") {
                            return fail(rpos, "randvar(...) takes no name=: the variable it is set to is its name");
                        }
                        attrs.insert(
                            0,
                            Attr {
                                name: "name".into(),
                                value: Value::Var(var),
                                pos: vpos,
                            },
                        );
                        return Ok(Stmt::DefineRandvar { attrs, pos });
                    }
                    if w == "cvar" {
                        self.next();
                        self.expect(Tok::LParen, "'(' after cvar")?;
                        let attrs = self.attrs()?;
                        self.expect(Tok::RParen, "')' to close cvar(")?;
                        return Ok(Stmt::Set {
                            var,
                            value: SetValue::Cvar(attrs),
                            pos,
                        });
                    }
                }
                let value = self.value()?;
                Ok(Stmt::Set {
                    var,
                    value: SetValue::Value(value),
                    pos,
                })
            }
            Tok::Word(w) if w == "mode" => {
                let (q, qpos) = self.word("'quit'")?;
                if q != "quit" {
                    return fail(
                        qpos,
                        format!("expected 'quit' after 'set mode', found '{q}'"),
                    );
                }
                let (m, mpos) = self.word("timeout, alldone or firstdone")?;
                let mode = match m.as_str() {
                    "timeout" => QuitMode::Timeout,
                    "alldone" => QuitMode::AllDone,
                    "firstdone" => QuitMode::FirstDone,
                    _ => {
                        return fail(
                            mpos,
                            format!(
                                "unknown quit mode '{m}': expected timeout, alldone or firstdone"
                            ),
                        )
                    }
                };
                Ok(Stmt::SetMode { mode, pos })
            }
            other => fail(
                vpos,
                format!("expected $variable or 'mode' after set, found {other}"),
            ),
        }
    }

    fn define(&mut self, pos: Pos) -> R<Stmt> {
        let (what, wpos) = self.word("fileset, file, randvar, process or flowop")?;
        match what.as_str() {
            "fileset" | "filesets" => Ok(Stmt::DefineFileset {
                is_file: false,
                attrs: self.attrs()?,
                pos,
            }),
            "file" => Ok(Stmt::DefineFileset {
                is_file: true,
                attrs: self.attrs()?,
                pos,
            }),
            "randvar" => Ok(Stmt::DefineRandvar {
                attrs: self.attrs()?,
                pos,
            }),
            "process" | "processes" => {
                let attrs = self.attrs()?;
                self.expect(Tok::LBrace, "'{' to start the process's threads")?;
                let mut threads = Vec::new();
                while *self.peek() != Tok::RBrace {
                    let (kw, tpos) = self.word("'thread' or '}'")?;
                    if kw != "thread" {
                        return fail(
                            tpos,
                            format!("expected 'thread' or '}}' in a process, found '{kw}'"),
                        );
                    }
                    let tattrs = self.attrs()?;
                    let flowops = self.flowop_block("thread")?;
                    threads.push(ThreadDef {
                        attrs: tattrs,
                        flowops,
                        pos: tpos,
                    });
                }
                self.next();
                Ok(Stmt::DefineProcess {
                    attrs,
                    threads,
                    pos,
                })
            }
            "flowop" => {
                let attrs = self.attrs()?;
                let flowops = self.flowop_block("composite flowop")?;
                Ok(Stmt::DefineComposite {
                    attrs,
                    flowops,
                    pos,
                })
            }
            other => fail(
                wpos,
                format!(
                    "cannot define '{other}': expected fileset, file, randvar, process or flowop"
                ),
            ),
        }
    }

    fn flowop_block(&mut self, owner: &str) -> R<Vec<FlowopDef>> {
        self.expect(Tok::LBrace, &format!("'{{' to start the {owner}'s flowops"))?;
        let mut flowops = Vec::new();
        while *self.peek() != Tok::RBrace {
            let (kw, fpos) = self.word("'flowop' or '}'")?;
            if kw != "flowop" {
                return fail(
                    fpos,
                    format!("expected 'flowop' or '}}' in a {owner}, found '{kw}'"),
                );
            }
            let (kind, kpos) = self.word("a flowop type (read, write, createfile, ...)")?;
            let attrs = self.attrs()?;
            flowops.push(FlowopDef {
                kind,
                attrs,
                pos: kpos,
            });
        }
        self.next();
        Ok(flowops)
    }

    /// `name[=value] {, name[=value]}`; may be empty.
    fn attrs(&mut self) -> R<Vec<Attr>> {
        let mut out = Vec::new();
        let Tok::Word(_) = self.peek() else {
            return Ok(out);
        };
        // An attribute list ends at a keyword that starts the next statement only when no
        // comma joined it, so parse the first attribute, then only continue after commas.
        loop {
            // A composite flowop's local variable: `$v` (declared) or `$v=value` (bound),
            // in `define flowop name=X, $v { ... }` and in `flowop X name=..., $v=value`.
            let (name, pos) = if let Tok::Var(v) = self.peek().clone() {
                let pos = self.pos();
                self.next();
                (format!("${v}"), pos)
            } else {
                self.word("an attribute name")?
            };
            let value = if *self.peek() == Tok::Eq {
                self.next();
                self.value()?
            } else {
                Value::Flag
            };
            out.push(Attr { name, value, pos });
            if *self.peek() == Tok::Comma {
                self.next();
            } else {
                return Ok(out);
            }
        }
    }

    fn value(&mut self) -> R<Value> {
        let pos = self.pos();
        match self.next().tok {
            Tok::Num(n) => Ok(Value::Num(n)),
            Tok::Str(s) => Ok(Value::Str(s)),
            Tok::Word(w) => Ok(Value::Word(w)),
            Tok::Var(v) => Ok(Value::Var(v)),
            Tok::LBrace => {
                let mut rows = Vec::new();
                loop {
                    self.expect(Tok::LBrace, "'{' to start a table row")?;
                    let mut row = Vec::new();
                    loop {
                        row.push(self.value()?);
                        if *self.peek() == Tok::Comma {
                            self.next();
                        } else {
                            break;
                        }
                    }
                    self.expect(Tok::RBrace, "'}' to end a table row")?;
                    rows.push(row);
                    if *self.peek() == Tok::Comma {
                        self.next();
                    } else {
                        break;
                    }
                }
                self.expect(Tok::RBrace, "'}' to end the table")?;
                Ok(Value::Table(rows))
            }
            other => fail(
                pos,
                format!(
                    "expected a value (number, $variable, word or quoted string), found {other}"
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = r#"
set $dir=/tmp
set $meanfilesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set mode quit alldone
define fileset name=bigfileset,path=$dir,size=$meanfilesize,entries=$nfiles,
   dirwidth=20,prealloc=80,reuse
define randvar name=$rs, type=tabular, randtable={{50, 1k, 2k},{50, 4k, 8k}}
define process name=p,instances=1
{
  thread name=t,memsize=10m,instances=$nthreads
  {
    flowop createfile name=c1,filesetname=bigfileset,fd=1
    flowop writewholefile name=w1,fd=1,iosize=1m
    flowop closefile name=cl1,fd=1
  }
}
eventgen rate=100
enable lathist
psrun -10 60
run 60
echo "done $dir"
"#;

    #[test]
    fn parses_sample() {
        let s = parse(SAMPLE).unwrap();
        assert_eq!(s.len(), 11);
        match &s[3] {
            Stmt::DefineFileset { attrs, .. } => {
                assert_eq!(attrs.len(), 7);
                assert_eq!(attrs[6].value, Value::Flag);
            }
            other => panic!("{other:?}"),
        }
        match &s[5] {
            Stmt::DefineProcess { threads, .. } => assert_eq!(threads[0].flowops.len(), 3),
            other => panic!("{other:?}"),
        }
        assert!(matches!(s[8], Stmt::Psrun { negative: true, .. }));
    }

    #[test]
    fn errors_point_at_the_token() {
        let e = parse("define process name=p\n{\n  thread name=t\n  {\n    read name=x\n  }\n}")
            .unwrap_err();
        assert_eq!(e.pos, Pos { line: 5, col: 5 });
        assert!(e.msg.contains("expected 'flowop'"), "{}", e.msg);
        let e = parse("set mode quit sometimes").unwrap_err();
        assert_eq!(e.pos.col, 15);
        let e = parse("run 10\nfrobnicate").unwrap_err();
        assert_eq!(e.pos, Pos { line: 2, col: 1 });
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn never_panics_and_errors_have_a_position(src in "[a-z$={}(),\"#0-9kmg .\n-]{0,80}") {
            if let Err(e) = parse(&src) {
                let lines = src.split('\n').count() as u32;
                prop_assert!(e.pos.line >= 1 && e.pos.line <= lines.max(1));
                prop_assert!(e.pos.col >= 1);
                prop_assert!(!e.msg.is_empty());
            }
        }

        #[test]
        fn mutated_sample_never_panics(cut in 0usize..400, insert in "[{}=,$\"()a-z0-9]{0,3}") {
            let mut s: String = SAMPLE.chars().take(cut).collect();
            s.push_str(&insert);
            s.extend(SAMPLE.chars().skip(cut + 1));
            let _ = parse(&s);
        }
    }
}
