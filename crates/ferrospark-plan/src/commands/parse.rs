//! Spark SQL's catalog commands from text: a small lexer and a recursive-descent parser for
//! `CREATE / DROP / ALTER / SHOW / DESCRIBE / INSERT / ANALYZE / REFRESH ...`. A query inside
//! a command (`AS SELECT ...`, `INSERT ... SELECT ...`) is kept as text for the SQL planner.

use std::collections::BTreeMap;

use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{FerroError, Result};

use super::{ColumnDef, Command, CreateTable, FunctionScope, StatsMode, ViewDef, ViewKind};

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An unquoted word (keyword or name).
    Word(String),
    /// A backquoted name.
    Quoted(String),
    /// A string literal's content.
    Str(String),
    /// A number as written.
    Num(String),
    /// One punctuation character.
    Punct(char),
}

struct Lexed {
    toks: Vec<(Tok, usize)>,
}

fn syntax(text: &str, near: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[PARSE_SYNTAX_ERROR] Syntax error at or near '{near}'. SQLSTATE: 42601\n== SQL ==\n{}",
        text.trim()
    ))
}

fn lex(text: &str) -> Result<Lexed> {
    let b = text.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'-' && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if c == b'`' {
            let start = i;
            let mut s = String::new();
            i += 1;
            loop {
                match text[i..].chars().next() {
                    None => return Err(syntax(text, &text[start..])),
                    Some('`') if b.get(i + 1) == Some(&b'`') => {
                        s.push('`');
                        i += 2;
                    }
                    Some('`') => {
                        i += 1;
                        break;
                    }
                    Some(ch) => {
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            toks.push((Tok::Quoted(s), start));
        } else if c == b'\'' || c == b'"' {
            let start = i;
            let q = c as char;
            let mut s = String::new();
            i += 1;
            loop {
                match text[i..].chars().next() {
                    None => return Err(syntax(text, &text[start..])),
                    Some('\\') => {
                        let next = text[i + 1..].chars().next();
                        match next {
                            Some(n) => {
                                s.push(match n {
                                    'n' => '\n',
                                    't' => '\t',
                                    'r' => '\r',
                                    '0' => '\0',
                                    other => other,
                                });
                                i += 1 + n.len_utf8();
                            }
                            None => return Err(syntax(text, &text[start..])),
                        }
                    }
                    Some(ch) if ch == q => {
                        i += 1;
                        break;
                    }
                    Some(ch) => {
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            toks.push((Tok::Str(s), start));
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            toks.push((Tok::Num(text[start..i].to_string()), start));
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len() {
                let ch = text[i..].chars().next().unwrap_or(' ');
                if ch.is_alphanumeric() || ch == '_' {
                    i += ch.len_utf8();
                } else {
                    break;
                }
            }
            toks.push((Tok::Word(text[start..i].to_string()), start));
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            toks.push((Tok::Punct(ch), i));
            i += ch.len_utf8();
        }
    }
    Ok(Lexed { toks })
}

/// Whether `text` starts with a command keyword (as opposed to a query).
pub(crate) fn is_command(text: &str) -> bool {
    let Ok(l) = lex(text) else { return false };
    let kw = |i: usize| match l.toks.get(i) {
        Some((Tok::Word(w), _)) => w.to_ascii_uppercase(),
        _ => String::new(),
    };
    match kw(0).as_str() {
        "CREATE" | "DROP" | "ALTER" | "USE" | "SHOW" | "INSERT" | "ANALYZE" | "REFRESH"
        | "MSCK" | "TRUNCATE" => true,
        "DESCRIBE" | "DESC" => kw(1) != "QUERY" && kw(1) != "SELECT" && kw(1) != "WITH",
        _ => false,
    }
}

struct Parser<'a> {
    text: &'a str,
    toks: Vec<(Tok, usize)>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn err(&self) -> FerroError {
        let near = match self.toks.get(self.pos) {
            Some((_, at)) => {
                let rest = &self.text[*at..];
                rest.split_whitespace().next().unwrap_or("").to_string()
            }
            None => "end of input".into(),
        };
        syntax(self.text, &near)
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(w)) if w.eq_ignore_ascii_case(kw))
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_kws(&mut self, kws: &[&str]) -> bool {
        let save = self.pos;
        for k in kws {
            if !self.eat_kw(k) {
                self.pos = save;
                return false;
            }
        }
        true
    }

    fn expect_kw(&mut self, kw: &str) -> Result<()> {
        if self.eat_kw(kw) {
            Ok(())
        } else {
            Err(self.err())
        }
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(self.err())
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
            || (self.peek() == Some(&Tok::Punct(';')) && self.pos + 1 == self.toks.len())
    }

    fn expect_end(&self) -> Result<()> {
        if self.at_end() {
            Ok(())
        } else {
            Err(self.err())
        }
    }

    fn ident(&mut self) -> Result<String> {
        match self.peek().cloned() {
            Some(Tok::Word(w)) | Some(Tok::Quoted(w)) => {
                self.pos += 1;
                Ok(w)
            }
            _ => Err(self.err()),
        }
    }

    fn multipart(&mut self) -> Result<Vec<String>> {
        let mut parts = vec![self.ident()?];
        while self.eat_punct('.') {
            parts.push(self.ident()?);
        }
        Ok(parts)
    }

    fn string(&mut self) -> Result<String> {
        match self.peek().cloned() {
            Some(Tok::Str(s)) => {
                self.pos += 1;
                Ok(s)
            }
            _ => Err(self.err()),
        }
    }

    fn maybe_string(&mut self) -> Option<String> {
        match self.peek().cloned() {
            Some(Tok::Str(s)) => {
                self.pos += 1;
                Some(s)
            }
            _ => None,
        }
    }

    /// The rest of the text from the current token on (a query).
    fn rest(&mut self) -> Result<String> {
        let Some((_, at)) = self.toks.get(self.pos) else {
            return Err(self.err());
        };
        let at = *at;
        self.pos = self.toks.len();
        Ok(self.text[at..].trim().trim_end_matches(';').to_string())
    }

    /// `(key = value, ...)`: keys are strings or dotted names, values strings, numbers,
    /// booleans or names.
    fn properties(&mut self) -> Result<BTreeMap<String, String>> {
        self.expect_punct('(')?;
        let mut out = BTreeMap::new();
        if self.eat_punct(')') {
            return Ok(out);
        }
        loop {
            let key = match self.peek().cloned() {
                Some(Tok::Str(s)) => {
                    self.pos += 1;
                    s
                }
                _ => self.multipart()?.join("."),
            };
            self.eat_punct('=');
            let value = self.value()?.unwrap_or_default();
            out.insert(key, value);
            if self.eat_punct(')') {
                return Ok(out);
            }
            self.expect_punct(',')?;
        }
    }

    /// A literal value: `Some(text)`, or `None` for NULL.
    fn value(&mut self) -> Result<Option<String>> {
        let neg = self.eat_punct('-');
        let v = match self.peek().cloned() {
            Some(Tok::Str(s)) => Some(s),
            Some(Tok::Num(n)) => Some(if neg { format!("-{n}") } else { n }),
            Some(Tok::Word(w)) if w.eq_ignore_ascii_case("null") => None,
            Some(Tok::Word(w)) => Some(w),
            _ => return Err(self.err()),
        };
        self.pos += 1;
        Ok(v)
    }

    /// `(k = v, k2, ...)`: a value per key; a key without one is dynamic (`None`).
    fn partition_spec(&mut self) -> Result<Vec<(String, Option<Option<String>>)>> {
        self.expect_punct('(')?;
        let mut out = Vec::new();
        loop {
            let key = self.ident()?;
            let v = if self.eat_punct('=') {
                Some(self.value()?)
            } else {
                None
            };
            out.push((key, v));
            if self.eat_punct(')') {
                return Ok(out);
            }
            self.expect_punct(',')?;
        }
    }

    fn static_spec(&mut self) -> Result<Vec<(String, Option<String>)>> {
        self.partition_spec()?
            .into_iter()
            .map(|(k, v)| v.map(|v| (k, v)).ok_or_else(|| self.err()))
            .collect()
    }

    fn name_list(&mut self) -> Result<Vec<String>> {
        self.expect_punct('(')?;
        let mut out = Vec::new();
        loop {
            out.push(self.ident()?);
            if self.eat_punct(')') {
                return Ok(out);
            }
            self.expect_punct(',')?;
        }
    }

    /// A Spark type: `int`, `decimal(10, 2)`, `array<int>`, `map<string, int>`,
    /// `struct<a: int, b: string>`.
    fn data_type(&mut self, tz: &str) -> Result<DataType> {
        let name = self.ident()?;
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "array" => {
                self.expect_punct('<')?;
                let inner = self.data_type(tz)?;
                self.expect_punct('>')?;
                Ok(DataType::List(std::sync::Arc::new(Field::new(
                    "element", inner, true,
                ))))
            }
            "map" => {
                self.expect_punct('<')?;
                let k = self.data_type(tz)?;
                self.expect_punct(',')?;
                let v = self.data_type(tz)?;
                self.expect_punct('>')?;
                let entries = Field::new(
                    "entries",
                    DataType::Struct(Fields::from(vec![
                        Field::new("key", k, false),
                        Field::new("value", v, true),
                    ])),
                    false,
                );
                Ok(DataType::Map(std::sync::Arc::new(entries), false))
            }
            "struct" => {
                self.expect_punct('<')?;
                let mut fields = Vec::new();
                if !self.eat_punct('>') {
                    loop {
                        let n = self.ident()?;
                        self.eat_punct(':');
                        let t = self.data_type(tz)?;
                        fields.push(Field::new(n, t, true));
                        if self.eat_punct('>') {
                            break;
                        }
                        self.expect_punct(',')?;
                    }
                }
                Ok(DataType::Struct(Fields::from(fields)))
            }
            _ => {
                let mut text = lower.clone();
                if (lower == "interval") && self.is_kw("day") {
                    while let Some(Tok::Word(w)) = self.peek().cloned() {
                        if ["day", "to", "second"].contains(&w.to_ascii_lowercase().as_str()) {
                            self.pos += 1;
                        } else {
                            break;
                        }
                    }
                } else if self.eat_punct('(') {
                    text.push('(');
                    loop {
                        match self.peek().cloned() {
                            Some(Tok::Num(n)) => {
                                text.push_str(&n);
                                self.pos += 1;
                            }
                            _ => return Err(self.err()),
                        }
                        if self.eat_punct(')') {
                            text.push(')');
                            break;
                        }
                        self.expect_punct(',')?;
                        text.push(',');
                    }
                }
                ferrospark_expr::types::parse_data_type(&text, tz)
            }
        }
    }

    fn column_defs(&mut self, tz: &str) -> Result<Vec<ColumnDef>> {
        self.expect_punct('(')?;
        let mut out = Vec::new();
        loop {
            let name = self.ident()?;
            let data_type = self.data_type(tz)?;
            let mut nullable = true;
            let mut comment = None;
            loop {
                if self.eat_kws(&["NOT", "NULL"]) {
                    nullable = false;
                } else if self.eat_kw("COMMENT") {
                    comment = Some(self.string()?);
                } else {
                    break;
                }
            }
            out.push(ColumnDef {
                name,
                data_type,
                nullable,
                comment,
            });
            if self.eat_punct(')') {
                return Ok(out);
            }
            self.expect_punct(',')?;
        }
    }

    /// `[IN | FROM db] [[LIKE] 'pattern']`.
    fn in_db_like(&mut self) -> Result<(Option<String>, Option<String>)> {
        let db = if self.eat_kw("IN") || self.eat_kw("FROM") {
            Some(self.ident()?)
        } else {
            None
        };
        self.eat_kw("LIKE");
        let pattern = self.maybe_string();
        self.expect_end()?;
        Ok((db, pattern))
    }
}

fn is_schema_word(p: &mut Parser<'_>) -> bool {
    p.eat_kw("DATABASE") || p.eat_kw("SCHEMA") || p.eat_kw("NAMESPACE")
}

/// Parses one catalog command (`is_command` said it is one).
pub(crate) fn parse_command(text: &str, tz: &str) -> Result<Command> {
    let l = lex(text)?;
    let mut p = Parser {
        text,
        toks: l.toks,
        pos: 0,
    };
    let first = p.ident()?.to_ascii_uppercase();
    let cmd = match first.as_str() {
        "CREATE" => create(&mut p, tz)?,
        "DROP" => drop(&mut p)?,
        "ALTER" => alter(&mut p, tz)?,
        "USE" => {
            is_schema_word(&mut p);
            let name = p.ident()?;
            p.expect_end()?;
            Command::Use { name }
        }
        "SHOW" => show(&mut p)?,
        "DESCRIBE" | "DESC" => describe(&mut p)?,
        "INSERT" => insert(&mut p)?,
        "ANALYZE" => {
            p.expect_kw("TABLE")?;
            let table = p.multipart()?;
            let spec = if p.eat_kw("PARTITION") {
                Some(p.partition_spec()?)
            } else {
                None
            };
            p.expect_kw("COMPUTE")?;
            p.expect_kw("STATISTICS")?;
            let mode = if p.eat_kw("NOSCAN") {
                StatsMode::NoScan
            } else if p.eat_kws(&["FOR", "ALL", "COLUMNS"]) {
                StatsMode::AllColumns
            } else if p.eat_kws(&["FOR", "COLUMNS"]) {
                let mut cols = vec![p.ident()?];
                while p.eat_punct(',') {
                    cols.push(p.ident()?);
                }
                StatsMode::Columns(cols)
            } else {
                StatsMode::Scan
            };
            p.expect_end()?;
            Command::Analyze { table, spec, mode }
        }
        "REFRESH" => {
            p.eat_kw("TABLE");
            let table = p.multipart()?;
            p.expect_end()?;
            Command::Refresh { table }
        }
        "MSCK" => {
            p.expect_kw("REPAIR")?;
            p.expect_kw("TABLE")?;
            let table = p.multipart()?;
            p.expect_end()?;
            Command::RecoverPartitions { table }
        }
        "TRUNCATE" => {
            p.expect_kw("TABLE")?;
            let table = p.multipart()?;
            let spec = if p.eat_kw("PARTITION") {
                Some(p.static_spec()?)
            } else {
                None
            };
            p.expect_end()?;
            Command::Truncate { table, spec }
        }
        _ => return Err(p.err()),
    };
    Ok(cmd)
}

fn create(p: &mut Parser<'_>, tz: &str) -> Result<Command> {
    let replace = p.eat_kws(&["OR", "REPLACE"]);
    let global = p.eat_kw("GLOBAL");
    let temporary = p.eat_kw("TEMPORARY") || p.eat_kw("TEMP");
    if !replace && !global && !temporary && is_schema_word(p) {
        let if_not_exists = p.eat_kws(&["IF", "NOT", "EXISTS"]);
        let name = p.ident()?;
        let (mut comment, mut location, mut properties) = (None, None, BTreeMap::new());
        while !p.at_end() {
            if p.eat_kw("COMMENT") {
                comment = Some(p.string()?);
            } else if p.eat_kw("LOCATION") {
                location = Some(p.string()?);
            } else if p.eat_kw("WITH") {
                if !(p.eat_kw("DBPROPERTIES") || p.eat_kw("PROPERTIES")) {
                    return Err(p.err());
                }
                properties = p.properties()?;
            } else {
                return Err(p.err());
            }
        }
        return Ok(Command::CreateDatabase {
            name,
            if_not_exists,
            comment,
            location,
            properties,
        });
    }
    if p.eat_kw("VIEW") {
        let if_not_exists = p.eat_kws(&["IF", "NOT", "EXISTS"]);
        let name = p.multipart()?;
        if temporary {
            if let Some(view) = temp_view_using(p, &name, replace, global, tz)? {
                return Ok(view);
            }
        }
        let columns = if p.peek() == Some(&Tok::Punct('(')) {
            p.name_list()?
        } else {
            Vec::new()
        };
        let mut comment = None;
        let mut properties = BTreeMap::new();
        loop {
            if p.eat_kw("COMMENT") {
                comment = Some(p.string()?);
            } else if p.eat_kw("TBLPROPERTIES") {
                properties = p.properties()?;
            } else {
                break;
            }
        }
        p.expect_kw("AS")?;
        let query = p.rest()?;
        let kind = match (global, temporary) {
            (true, _) => ViewKind::GlobalTemp,
            (false, true) => ViewKind::Temp,
            (false, false) => ViewKind::Persistent,
        };
        return Ok(Command::CreateView(Box::new(ViewDef {
            name,
            replace,
            if_not_exists,
            kind,
            columns,
            query,
            comment,
            properties,
        })));
    }
    if p.eat_kw("FUNCTION") {
        let if_not_exists = p.eat_kws(&["IF", "NOT", "EXISTS"]);
        let name = p.multipart()?;
        p.expect_punct('(')?;
        let mut params = Vec::new();
        if !p.eat_punct(')') {
            loop {
                let n = p.ident()?;
                let start = p.pos;
                p.data_type(tz)?;
                let ty = type_text(p, start);
                params.push((n, ty));
                if p.eat_punct(')') {
                    break;
                }
                p.expect_punct(',')?;
            }
        }
        let returns = if p.eat_kw("RETURNS") {
            let start = p.pos;
            p.data_type(tz)?;
            Some(type_text(p, start))
        } else {
            None
        };
        p.expect_kw("RETURN")?;
        let body = p.rest()?;
        return Ok(Command::CreateFunction {
            name,
            temporary,
            replace,
            if_not_exists,
            params,
            returns,
            body,
        });
    }
    let external = p.eat_kw("EXTERNAL");
    p.expect_kw("TABLE")?;
    let if_not_exists = p.eat_kws(&["IF", "NOT", "EXISTS"]);
    let name = p.multipart()?;
    let mut t = CreateTable {
        name,
        replace,
        external,
        if_not_exists,
        columns: None,
        provider: None,
        options: BTreeMap::new(),
        partition_by: Vec::new(),
        location: None,
        comment: None,
        properties: BTreeMap::new(),
        query: None,
    };
    if p.peek() == Some(&Tok::Punct('(')) {
        t.columns = Some(p.column_defs(tz)?);
    }
    while !p.at_end() {
        if p.eat_kw("USING") || p.eat_kws(&["STORED", "AS"]) {
            t.provider = Some(p.ident()?.to_ascii_lowercase());
        } else if p.eat_kw("OPTIONS") {
            t.options = p.properties()?;
        } else if p.eat_kws(&["PARTITIONED", "BY"]) {
            // Names of columns above, or definitions of columns added at the end.
            let save = p.pos;
            match p.column_defs(tz) {
                Ok(defs) => {
                    t.partition_by = defs.iter().map(|d| d.name.clone()).collect();
                    t.columns.get_or_insert_with(Vec::new).extend(defs);
                }
                Err(_) => {
                    p.pos = save;
                    t.partition_by = p.name_list()?;
                }
            }
        } else if p.eat_kw("LOCATION") {
            t.location = Some(p.string()?);
        } else if p.eat_kw("COMMENT") {
            t.comment = Some(p.string()?);
        } else if p.eat_kw("TBLPROPERTIES") {
            t.properties = p.properties()?;
        } else if p.eat_kw("AS") || p.is_kw("SELECT") || p.is_kw("WITH") {
            t.query = Some(p.rest()?);
        } else {
            return Err(p.err());
        }
    }
    Ok(Command::CreateTable(Box::new(t)))
}

/// The text of the tokens from `start` to the current one (a type as written).
fn type_text(p: &Parser<'_>, start: usize) -> String {
    let from = p.toks[start].1;
    let to = p.toks.get(p.pos).map(|(_, at)| *at).unwrap_or(p.text.len());
    p.text[from..to].trim().to_ascii_uppercase()
}

/// `CREATE [OR REPLACE] [GLOBAL] TEMPORARY VIEW v [(col type, ...)] USING fmt [OPTIONS
/// (...)]`: a view over the files at the `path` option, or an empty relation of the columns
/// given when there is none. `None` (the parser where it was) for a view over a query.
fn temp_view_using(
    p: &mut Parser<'_>,
    name: &[String],
    replace: bool,
    global: bool,
    tz: &str,
) -> Result<Option<Command>> {
    let start = p.pos;
    let columns = if p.peek() == Some(&Tok::Punct('(')) {
        match p.column_defs(tz) {
            Ok(c) => Some(c),
            Err(_) => {
                p.pos = start;
                return Ok(None);
            }
        }
    } else {
        None
    };
    if !p.eat_kw("USING") {
        p.pos = start;
        return Ok(None);
    }
    let provider = p.ident()?.to_ascii_lowercase();
    let options = if p.eat_kw("OPTIONS") {
        p.properties()?
    } else {
        BTreeMap::new()
    };
    p.expect_end()?;
    let quote = |n: &str| format!("`{}`", n.replace('`', "``"));
    let query = match (options.get("path"), &columns) {
        (Some(path), _) => format!("SELECT * FROM {provider}.{}", quote(path)),
        (None, Some(cols)) if !cols.is_empty() => {
            let items: Vec<String> = cols
                .iter()
                .map(|c| {
                    format!(
                        "CAST(NULL AS {}) AS {}",
                        ferrospark_expr::types::catalog_string(&c.data_type),
                        quote(&c.name)
                    )
                })
                .collect();
            format!("SELECT {} LIMIT 0", items.join(", "))
        }
        _ => {
            return Err(FerroError::Analysis(format!(
                "[UNABLE_TO_INFER_SCHEMA] Unable to infer schema for {}. It must be specified manually. SQLSTATE: 42KD9",
                provider.to_uppercase()
            )))
        }
    };
    Ok(Some(Command::CreateView(Box::new(ViewDef {
        name: name.to_vec(),
        replace,
        if_not_exists: false,
        kind: if global {
            ViewKind::GlobalTemp
        } else {
            ViewKind::Temp
        },
        columns: Vec::new(),
        query,
        comment: None,
        properties: BTreeMap::new(),
    }))))
}

fn drop(p: &mut Parser<'_>) -> Result<Command> {
    if is_schema_word(p) {
        let if_exists = p.eat_kws(&["IF", "EXISTS"]);
        let name = p.ident()?;
        let cascade = p.eat_kw("CASCADE");
        if !cascade {
            p.eat_kw("RESTRICT");
        }
        p.expect_end()?;
        return Ok(Command::DropDatabase {
            name,
            if_exists,
            cascade,
        });
    }
    let temporary = p.eat_kw("TEMPORARY");
    if p.eat_kw("FUNCTION") {
        let if_exists = p.eat_kws(&["IF", "EXISTS"]);
        let name = p.multipart()?;
        p.expect_end()?;
        return Ok(Command::DropFunction {
            name,
            temporary,
            if_exists,
        });
    }
    let is_view = if p.eat_kw("VIEW") {
        true
    } else {
        p.expect_kw("TABLE")?;
        false
    };
    let if_exists = p.eat_kws(&["IF", "EXISTS"]);
    let name = p.multipart()?;
    p.eat_kw("PURGE");
    p.expect_end()?;
    Ok(Command::DropTable {
        name,
        if_exists,
        is_view,
    })
}

fn alter(p: &mut Parser<'_>, tz: &str) -> Result<Command> {
    if is_schema_word(p) {
        let name = p.ident()?;
        p.expect_kw("SET")?;
        if p.eat_kw("LOCATION") {
            let location = p.string()?;
            p.expect_end()?;
            return Ok(Command::AlterDatabaseLocation { name, location });
        }
        if !(p.eat_kw("DBPROPERTIES") || p.eat_kw("PROPERTIES")) {
            return Err(p.err());
        }
        let properties = p.properties()?;
        p.expect_end()?;
        return Ok(Command::AlterDatabaseProperties { name, properties });
    }
    let view = p.eat_kw("VIEW");
    if !view {
        p.expect_kw("TABLE")?;
    }
    let table = p.multipart()?;
    let cmd = if p.eat_kws(&["RENAME", "TO"]) {
        Command::RenameTable {
            from: table,
            to: p.multipart()?,
        }
    } else if p.eat_kws(&["ADD", "COLUMNS"]) || p.eat_kws(&["ADD", "COLUMN"]) {
        Command::AddColumns {
            table,
            columns: p.column_defs(tz)?,
        }
    } else if p.eat_kws(&["SET", "TBLPROPERTIES"]) {
        Command::SetTblProperties {
            table,
            properties: p.properties()?,
        }
    } else if p.eat_kws(&["UNSET", "TBLPROPERTIES"]) {
        let if_exists = p.eat_kws(&["IF", "EXISTS"]);
        p.expect_punct('(')?;
        let mut keys = Vec::new();
        loop {
            keys.push(match p.peek().cloned() {
                Some(Tok::Str(s)) => {
                    p.pos += 1;
                    s
                }
                _ => p.multipart()?.join("."),
            });
            if p.eat_punct(')') {
                break;
            }
            p.expect_punct(',')?;
        }
        Command::UnsetTblProperties {
            table,
            keys,
            if_exists,
        }
    } else if p.eat_kw("ADD") {
        let if_not_exists = p.eat_kws(&["IF", "NOT", "EXISTS"]);
        let mut parts = Vec::new();
        while p.eat_kw("PARTITION") {
            let spec = p.static_spec()?;
            let location = if p.eat_kw("LOCATION") {
                Some(p.string()?)
            } else {
                None
            };
            parts.push((spec, location));
        }
        if parts.is_empty() {
            return Err(p.err());
        }
        Command::AddPartitions {
            table,
            if_not_exists,
            parts,
        }
    } else if p.eat_kw("DROP") {
        let if_exists = p.eat_kws(&["IF", "EXISTS"]);
        let mut specs = Vec::new();
        loop {
            p.expect_kw("PARTITION")?;
            specs.push(p.static_spec()?);
            if !p.eat_punct(',') {
                break;
            }
        }
        p.eat_kw("PURGE");
        Command::DropPartitions {
            table,
            if_exists,
            specs,
        }
    } else if p.eat_kws(&["RECOVER", "PARTITIONS"]) {
        Command::RecoverPartitions { table }
    } else {
        return Err(p.err());
    };
    p.expect_end()?;
    Ok(cmd)
}

fn show(p: &mut Parser<'_>) -> Result<Command> {
    if p.eat_kw("DATABASES") || p.eat_kw("SCHEMAS") || p.eat_kw("NAMESPACES") {
        p.eat_kw("LIKE");
        let pattern = p.maybe_string();
        p.expect_end()?;
        return Ok(Command::ShowDatabases { pattern });
    }
    if p.eat_kw("TABLES") {
        let (db, pattern) = p.in_db_like()?;
        return Ok(Command::ShowTables { db, pattern });
    }
    if p.eat_kw("VIEWS") {
        let (db, pattern) = p.in_db_like()?;
        return Ok(Command::ShowViews { db, pattern });
    }
    if p.eat_kw("PARTITIONS") {
        let table = p.multipart()?;
        let spec = if p.eat_kw("PARTITION") {
            Some(p.static_spec()?)
        } else {
            None
        };
        p.expect_end()?;
        return Ok(Command::ShowPartitions { table, spec });
    }
    if p.eat_kw("COLUMNS") {
        if !(p.eat_kw("IN") || p.eat_kw("FROM")) {
            return Err(p.err());
        }
        let mut table = p.multipart()?;
        if p.eat_kw("IN") || p.eat_kw("FROM") {
            let db = p.ident()?;
            if table.len() == 1 {
                table.insert(0, db);
            }
        }
        p.expect_end()?;
        return Ok(Command::ShowColumns { table });
    }
    if p.eat_kw("TBLPROPERTIES") {
        let table = p.multipart()?;
        let key = if p.eat_punct('(') {
            let k = match p.peek().cloned() {
                Some(Tok::Str(s)) => {
                    p.pos += 1;
                    s
                }
                _ => p.multipart()?.join("."),
            };
            p.expect_punct(')')?;
            Some(k)
        } else {
            None
        };
        p.expect_end()?;
        return Ok(Command::ShowTblProperties { table, key });
    }
    if p.eat_kws(&["CREATE", "TABLE"]) {
        let table = p.multipart()?;
        p.eat_kws(&["AS", "SERDE"]);
        p.expect_end()?;
        return Ok(Command::ShowCreateTable { table });
    }
    let scope = if p.eat_kw("USER") {
        FunctionScope::User
    } else if p.eat_kw("SYSTEM") {
        FunctionScope::System
    } else {
        p.eat_kw("ALL");
        FunctionScope::All
    };
    if p.eat_kw("FUNCTIONS") {
        let (_, pattern) = p.in_db_like()?;
        return Ok(Command::ShowFunctions { scope, pattern });
    }
    Err(p.err())
}

fn describe(p: &mut Parser<'_>) -> Result<Command> {
    if is_schema_word(p) {
        let extended = p.eat_kw("EXTENDED");
        let name = p.ident()?;
        p.expect_end()?;
        return Ok(Command::DescribeDatabase { name, extended });
    }
    if p.eat_kw("FUNCTION") {
        let extended = p.eat_kw("EXTENDED");
        let name = p.multipart()?;
        p.expect_end()?;
        return Ok(Command::DescribeFunction { name, extended });
    }
    p.eat_kw("TABLE");
    let extended = p.eat_kw("EXTENDED") || p.eat_kw("FORMATTED");
    let table = p.multipart()?;
    if p.eat_kw("PARTITION") {
        p.static_spec()?;
    }
    let column = if p.at_end() {
        None
    } else {
        Some(p.multipart()?.join("."))
    };
    p.expect_end()?;
    Ok(Command::DescribeTable {
        table,
        extended,
        column,
    })
}

fn insert(p: &mut Parser<'_>) -> Result<Command> {
    let overwrite = if p.eat_kw("OVERWRITE") {
        true
    } else {
        p.expect_kw("INTO")?;
        false
    };
    p.eat_kw("TABLE");
    let table = p.multipart()?;
    let spec = if p.eat_kw("PARTITION") {
        p.partition_spec()?
    } else {
        Vec::new()
    };
    // A column list, unless the parenthesis opens the query itself.
    let mut columns = Vec::new();
    if p.peek() == Some(&Tok::Punct('(')) {
        let save = p.pos;
        p.pos += 1;
        let is_query = p.is_kw("SELECT") || p.is_kw("WITH") || p.is_kw("VALUES");
        p.pos = save;
        if !is_query {
            columns = p.name_list()?;
        }
    }
    let query = p.rest()?;
    Ok(Command::Insert {
        table,
        overwrite,
        spec,
        columns,
        query,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Command {
        parse_command(s, "UTC").unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn commands_parse_with_their_clauses_in_any_order() {
        match parse("CREATE TABLE IF NOT EXISTS s.t (id INT NOT NULL COMMENT 'the id', m map<string, array<int>>, p INT) USING parquet TBLPROPERTIES ('a'='1') PARTITIONED BY (p) LOCATION '/x'") {
            Command::CreateTable(t) => {
                assert_eq!(t.name, ["s", "t"]);
                assert!(t.if_not_exists);
                let cols = t.columns.expect("columns");
                assert_eq!(cols[0].comment.as_deref(), Some("the id"));
                assert!(!cols[0].nullable);
                assert!(matches!(cols[1].data_type, DataType::Map(_, _)));
                assert_eq!(t.partition_by, ["p"]);
                assert_eq!(t.location.as_deref(), Some("/x"));
                assert_eq!(t.properties.get("a").map(String::as_str), Some("1"));
            }
            other => panic!("{other:?}"),
        }
        match parse("INSERT INTO t PARTITION (p=3, q) (a, b) SELECT 1, 2") {
            Command::Insert {
                spec,
                columns,
                query,
                ..
            } => {
                assert_eq!(
                    spec,
                    vec![("p".into(), Some(Some("3".into()))), ("q".into(), None)]
                );
                assert_eq!(columns, ["a", "b"]);
                assert_eq!(query, "SELECT 1, 2");
            }
            other => panic!("{other:?}"),
        }
        match parse("INSERT OVERWRITE t (SELECT 1)") {
            Command::Insert {
                columns,
                query,
                overwrite,
                ..
            } => {
                assert!(overwrite && columns.is_empty());
                assert_eq!(query, "(SELECT 1)");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse("CREATE DATABASE d LOCATION '/l' COMMENT 'c' WITH DBPROPERTIES ('k'='v')"),
            Command::CreateDatabase { .. }
        ));
        assert!(matches!(
            parse("SHOW TABLES IN s LIKE 't*'"),
            Command::ShowTables {
                db: Some(_),
                pattern: Some(_)
            }
        ));
        assert!(
            matches!(parse("ALTER TABLE t DROP IF EXISTS PARTITION (p=1), PARTITION (p=2)"), Command::DropPartitions { if_exists: true, ref specs, .. } if specs.len() == 2)
        );
        assert!(
            matches!(parse("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS a, b"), Command::Analyze { mode: StatsMode::Columns(ref c), .. } if c.len() == 2)
        );
        assert!(matches!(
            parse("CREATE OR REPLACE GLOBAL TEMPORARY VIEW v AS SELECT 1"),
            Command::CreateView(v) if v.kind == ViewKind::GlobalTemp && v.replace
        ));
        assert!(matches!(
            parse("DESC EXTENDED t id"),
            Command::DescribeTable {
                extended: true,
                column: Some(_),
                ..
            }
        ));
        match parse("CREATE TEMPORARY FUNCTION f(x INT, y DECIMAL(10, 2)) RETURNS INT RETURN x + 1")
        {
            Command::CreateFunction {
                params,
                returns,
                body,
                ..
            } => {
                assert_eq!(params[1], ("y".to_string(), "DECIMAL(10, 2)".to_string()));
                assert_eq!(returns.as_deref(), Some("INT"));
                assert_eq!(body, "x + 1");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_commands_name_the_token_at_fault() {
        for (text, near) in [
            ("CREATE TABLE t (a INT", "end of input"),
            ("DROP TABLE t extra", "extra"),
            ("SHOW NOTHING", "NOTHING"),
            ("CREATE TABLE `unclosed (a INT)", "`unclosed"),
        ] {
            let e = parse_command(text, "UTC").expect_err(text).to_string();
            assert!(
                e.contains("PARSE_SYNTAX_ERROR") && e.contains(near),
                "{text}: {e}"
            );
        }
        assert!(is_command("  create table t (a int)"));
        assert!(!is_command("SELECT 1") && !is_command("WITH x AS (SELECT 1) SELECT * FROM x"));
    }
}
