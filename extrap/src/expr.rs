//! A small integer expression language for plugin specs: users write
//! endpoint patterns such as `xor(rank, 2**k)` without recompiling.
//!
//! Integers (i64) with `+ - * / %` (division rounds down, and by zero is an
//! error), `**`, comparisons (`== != < <= > >=`, giving 1 or 0), `&& ||`,
//! `c ? a : b`, parentheses, variables, and the functions `xor(a, b)`,
//! `bitand(a, b)`, `bitor(a, b)`, `log2(a)` (rounded down), `clog2(a)`
//! (rounded up), `sqrt(a)` (rounded down: NPB BT and SP lay their square
//! rank counts out as `sqrt(P) x sqrt(P)`), `min(a, b)`, `max(a, b)`,
//! `abs(a)` and `sum(i, lo, hi, term)` (the term added up for `i` from `lo`
//! to `hi`).

use std::collections::HashMap;

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal.
    Num(i64),
    /// A variable.
    Var(String),
    /// A unary minus.
    Neg(Box<Expr>),
    /// A binary operation.
    Bin(String, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A function call.
    Call(String, Vec<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(i64),
    Id(String),
    Op(String),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let j = (i..b.len())
                .find(|&j| !b[j].is_ascii_digit())
                .unwrap_or(b.len());
            out.push(Tok::Num(
                s[i..j]
                    .parse()
                    .map_err(|_| format!("number {:?} too large", &s[i..j]))?,
            ));
            i = j;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let j = (i..b.len())
                .find(|&j| !(b[j].is_ascii_alphanumeric() || b[j] == b'_'))
                .unwrap_or(b.len());
            out.push(Tok::Id(s[i..j].to_string()));
            i = j;
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            if ["**", "==", "!=", "<=", ">=", "&&", "||"].contains(&two) {
                out.push(Tok::Op(two.to_string()));
                i += 2;
            } else if "+-*/%<>?:(),".contains(c) {
                out.push(Tok::Op(c.to_string()));
                i += 1;
            } else {
                return Err(format!("unexpected {c:?} in {s:?}"));
            }
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<&str> {
        match self.toks.get(self.pos) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }
    fn eat(&mut self, op: &str) -> bool {
        if self.peek_op() == Some(op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, op: &str) -> Result<(), String> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(format!("expected {op:?}"))
        }
    }
    fn expr(&mut self) -> Result<Expr, String> {
        let c = self.binary(0)?;
        if self.eat("?") {
            let a = self.expr()?;
            self.expect(":")?;
            let b = self.expr()?;
            return Ok(Expr::If(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }
    /// Precedence climbing over the binary operators, loosest first.
    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        const LEVELS: [&[&str]; 5] = [
            &["||"],
            &["&&"],
            &["==", "!=", "<", "<=", ">", ">="],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut lhs = self.binary(level + 1)?;
        while let Some(op) = self.peek_op().map(str::to_string) {
            if !LEVELS[level].contains(&op.as_str()) {
                break;
            }
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }
    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        let base = self.atom()?;
        if self.eat("**") {
            let e = self.unary()?;
            return Ok(Expr::Bin("**".into(), Box::new(base), Box::new(e)));
        }
        Ok(base)
    }
    fn atom(&mut self) -> Result<Expr, String> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(Expr::Num(n))
            }
            Some(Tok::Id(name)) => {
                self.pos += 1;
                if self.eat("(") {
                    let mut args = Vec::new();
                    if !self.eat(")") {
                        loop {
                            args.push(self.expr()?);
                            if self.eat(")") {
                                break;
                            }
                            self.expect(",")?;
                        }
                    }
                    Ok(Expr::Call(name, args))
                } else {
                    Ok(Expr::Var(name))
                }
            }
            Some(Tok::Op(o)) if o == "(" => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Some(Tok::Op(o)) => Err(format!("unexpected {o:?}")),
            None => Err("unexpected end of the expression".into()),
        }
    }
}

impl std::str::FromStr for Expr {
    type Err = String;
    fn from_str(s: &str) -> Result<Expr, String> {
        let mut p = Parser {
            toks: lex(s)?,
            pos: 0,
        };
        let e = p.expr().map_err(|e| format!("{s:?}: {e}"))?;
        if p.pos != p.toks.len() {
            return Err(format!("{s:?}: unexpected text after the expression"));
        }
        Ok(e)
    }
}

/// Variable values.
pub type Env = HashMap<String, i64>;

impl Expr {
    /// The value, or why there is none (an unknown variable or function,
    /// division by zero, overflow).
    pub fn eval(&self, env: &Env) -> Result<i64, String> {
        let of = || "overflow".to_string();
        Ok(match self {
            Expr::Num(n) => *n,
            Expr::Var(v) => *env.get(v).ok_or_else(|| format!("unknown variable {v}"))?,
            Expr::Neg(e) => e.eval(env)?.checked_neg().ok_or_else(of)?,
            Expr::If(c, a, b) => {
                if c.eval(env)? != 0 {
                    a.eval(env)?
                } else {
                    b.eval(env)?
                }
            }
            Expr::Bin(op, a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                match op.as_str() {
                    "+" => x.checked_add(y).ok_or_else(of)?,
                    "-" => x.checked_sub(y).ok_or_else(of)?,
                    "*" => x.checked_mul(y).ok_or_else(of)?,
                    "/" | "%" if y == 0 => return Err("division by zero".into()),
                    "/" => x.div_euclid(y),
                    "%" => x.rem_euclid(y),
                    "**" => u32::try_from(y)
                        .ok()
                        .and_then(|y| x.checked_pow(y))
                        .ok_or_else(of)?,
                    "==" => i64::from(x == y),
                    "!=" => i64::from(x != y),
                    "<" => i64::from(x < y),
                    "<=" => i64::from(x <= y),
                    ">" => i64::from(x > y),
                    ">=" => i64::from(x >= y),
                    "&&" => i64::from(x != 0 && y != 0),
                    "||" => i64::from(x != 0 || y != 0),
                    _ => return Err(format!("unknown operator {op}")),
                }
            }
            Expr::Call(f, args) if f == "sum" => sum(args, env)?,
            Expr::Call(f, args) => {
                let v: Vec<i64> = args.iter().map(|a| a.eval(env)).collect::<Result<_, _>>()?;
                let log2 = |x: i64| -> Result<i64, String> {
                    if x <= 0 {
                        return Err(format!("log2 of {x}"));
                    }
                    Ok(63 - i64::from(x.leading_zeros()))
                };
                match (f.as_str(), v.as_slice()) {
                    ("xor", [a, b]) => a ^ b,
                    ("bitand", [a, b]) => a & b,
                    ("bitor", [a, b]) => a | b,
                    ("min", [a, b]) => *a.min(b),
                    ("max", [a, b]) => *a.max(b),
                    ("abs", [a]) => a.checked_abs().ok_or_else(of)?,
                    ("log2", [a]) => log2(*a)?,
                    ("sqrt", [a]) => isqrt(*a)?,
                    ("clog2", [a]) => {
                        let l = log2(*a)?;
                        if 1i64 << l == *a { l } else { l + 1 }
                    }
                    _ => return Err(format!("unknown function {f} with {} argument(s)", v.len())),
                }
            }
        })
    }
}

/// The most terms a `sum` may add: a spec's sums run over a rank's cells
/// or a grid's side, and a bound keeps a wrong range from hanging the tool.
const MAX_TERMS: i64 = 1 << 20;

/// `sum(i, lo, hi, body)`: `body` added up for `i` from `lo` to `hi`
/// inclusive (0 when `hi < lo`), with `i` bound in `body` only. NPB BT's
/// face buffers add one face per cell of a rank, and the cells differ in
/// size where the grid does not split evenly.
fn sum(args: &[Expr], env: &Env) -> Result<i64, String> {
    let [Expr::Var(var), lo, hi, body] = args else {
        return Err(
            "sum takes a variable, a first and a last value, and a term: \
                    sum(i, lo, hi, term)"
                .into(),
        );
    };
    let (lo, hi) = (lo.eval(env)?, hi.eval(env)?);
    if hi.saturating_sub(lo) >= MAX_TERMS {
        return Err(format!("sum over {lo}..{hi}: more than {MAX_TERMS} terms"));
    }
    let mut inner = env.clone();
    let mut total: i64 = 0;
    for i in lo..=hi {
        inner.insert(var.clone(), i);
        total = total
            .checked_add(body.eval(&inner)?)
            .ok_or_else(|| "overflow".to_string())?;
    }
    Ok(total)
}

/// The integer square root, rounded down, of a non-negative `a`.
fn isqrt(a: i64) -> Result<i64, String> {
    let a = u64::try_from(a).map_err(|_| format!("sqrt of {a} < 0"))?;
    Ok(a.isqrt() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str, vars: &[(&str, i64)]) -> Result<i64, String> {
        let env: Env = vars.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        s.parse::<Expr>()?.eval(&env)
    }

    #[test]
    fn arithmetic_and_precedence() {
        assert_eq!(ev("1 + 2 * 3 - 4 / 2", &[]), Ok(5));
        assert_eq!(ev("-7 / 2", &[]), Ok(-4));
        assert_eq!(ev("-7 % 4", &[]), Ok(1));
        assert_eq!(ev("2 ** 3 ** 2", &[]), Ok(512));
        assert_eq!(ev("1 < 2 && 3 >= 3 ? 10 : 20", &[]), Ok(10));
        assert_eq!(ev("xor(rank, 2**k)", &[("rank", 5), ("k", 1)]), Ok(7));
        assert_eq!(ev("clog2(5) + log2(5)", &[]), Ok(5));
        assert_eq!(ev("sqrt(35) + sqrt(36) + sqrt(0)", &[]), Ok(11));
        assert!(ev("sqrt(-1)", &[]).is_err());
        // NPB BT's west face buffer at 64 points on 3x3 ranks (cells of 22,
        // 21, 21): rank 4 (x = y = 1) owns cells (x+c, y-c, c), and each
        // cell off the west boundary adds 10 values per point of its face.
        let west = "sum(c, 0, p - 1, ((x + c) % p != 0) * 10 * \
                    (n / p + ((y - c) % p < n % p)) * (n / p + (c < n % p)))";
        let env = [("p", 3), ("n", 64), ("x", 1), ("y", 1)];
        assert_eq!(ev(west, &env), Ok(10 * (21 * 22 + 22 * 21)));
        assert_eq!(ev("sum(i, 1, 4, i * i) + sum(i, 3, 2, 1)", &[]), Ok(30));
        // The bound variable shadows an outer one and ends with the sum.
        assert_eq!(ev("sum(k, 0, 2, k) + k", &[("k", 10)]), Ok(13));
    }

    #[test]
    fn errors_are_reported() {
        assert!(ev("1 +", &[]).is_err());
        assert!(ev("x", &[]).unwrap_err().contains("unknown variable"));
        assert!(ev("1 / 0", &[]).unwrap_err().contains("division"));
        assert!(ev("frob(1)", &[]).unwrap_err().contains("unknown function"));
        assert!(ev("2 ** 64", &[]).unwrap_err().contains("overflow"));
        assert!(ev("(1", &[]).is_err());
        assert!(ev("1 $ 2", &[]).is_err());
        assert!(
            ev("sum(1, 0, 2, 3)", &[])
                .unwrap_err()
                .contains("sum takes")
        );
        assert!(
            ev("sum(i, 0, 2 ** 30, i)", &[])
                .unwrap_err()
                .contains("terms")
        );
    }
}
