//! User-defined functions: scalar functions whose body lives outside the engine (Python
//! functions, which `ferrospark-python` calls over whole Arrow arrays). The engine knows a
//! name, a result type, whether the function is deterministic, and how to call it over one
//! batch of argument columns.
//!
//! A grouped-aggregate function (a `pandas_udf` from Series to a scalar) is the same kind of
//! function called once per group: [`udf_call`] hands it `collect_list(named_struct(a0, x,
//! a1, y, ...))`, each group's rows in input order with NULLs kept (the struct itself is
//! never NULL), so no aggregate of its own is needed and every aggregation path (hash,
//! sort, spilling, windows) carries it.

use std::fmt;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::expr::{Expr, Literal};

/// What a user-defined function does; implemented outside the engine.
pub trait ScalarUdfImpl: Send + Sync {
    /// The name it was defined or registered under; it names result columns (`f(a)`).
    fn name(&self) -> &str;
    /// The type of its results.
    fn return_type(&self) -> &DataType;
    /// Whether equal arguments always give equal results (`asNondeterministic()` says not).
    fn deterministic(&self) -> bool;
    /// Its results for `num_rows` rows of arguments (each argument holds `num_rows` values),
    /// in a session whose time zone is `session_tz` (a pandas function sees timestamps as
    /// wall-clock times there).
    fn invoke(&self, args: &[ArrayRef], num_rows: usize, session_tz: &str) -> Result<ArrayRef>;
}

/// A user-defined function as expressions hold it: cheap to clone, equal only to itself.
#[derive(Clone)]
pub struct ScalarUdf(Arc<dyn ScalarUdfImpl>);

impl ScalarUdf {
    /// Wraps an implementation.
    pub fn new(f: Arc<dyn ScalarUdfImpl>) -> Self {
        Self(f)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// The type of its results.
    pub fn return_type(&self) -> &DataType {
        self.0.return_type()
    }

    /// Whether it may be evaluated once for equal arguments, moved, or folded.
    pub fn deterministic(&self) -> bool {
        self.0.deterministic()
    }

    /// Calls it over `num_rows` rows, checking that it gave one value of its type per row
    /// (a result of a castable type, such as a timestamp in another zone, is cast).
    pub fn invoke(&self, args: &[ArrayRef], num_rows: usize, session_tz: &str) -> Result<ArrayRef> {
        let out = self.0.invoke(args, num_rows, session_tz)?;
        if out.len() != num_rows {
            return Err(FerroError::UserFunction(format!(
                "[SCHEMA_MISMATCH_FOR_PANDAS_UDF] the function {} returned {} values for {num_rows} rows; it must return one value per row",
                self.name(),
                out.len()
            )));
        }
        let want = self.return_type();
        if out.data_type() == want {
            return Ok(out);
        }
        arrow_cast::cast(&out, want).map_err(|e| {
            FerroError::UserFunction(format!(
                "[RESULT_TYPE_MISMATCH] the function {} returned {} values where {} was declared: {e}",
                self.name(),
                out.data_type(),
                crate::types::spark_type_name(want)
            ))
        })
    }
}

impl PartialEq for ScalarUdf {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.0), Arc::as_ptr(&other.0))
    }
}

impl fmt::Debug for ScalarUdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScalarUdf({})", self.name())
    }
}

// A Python function has no form a plan's JSON can carry to a Spark task; saying so here
// makes such a plan fail to serialize with the function's name instead of losing it.
impl Serialize for ScalarUdf {
    fn serialize<S: Serializer>(&self, _: S) -> std::result::Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom(format!(
            "the Python function {} cannot be sent to a Spark task; run the query in-process (collect / toArrow) or apply the function with PySpark",
            self.name()
        )))
    }
}

impl<'de> Deserialize<'de> for ScalarUdf {
    fn deserialize<D: Deserializer<'de>>(_: D) -> std::result::Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "a plan holding a Python function cannot be read back",
        ))
    }
}

/// A function registered under a name for SQL (`spark.udf.register`).
#[derive(Clone, Debug, PartialEq)]
pub struct RegisteredUdf {
    /// The function.
    pub udf: ScalarUdf,
    /// Called once per group (a grouped-aggregate `pandas_udf`) rather than once per row.
    pub aggregate: bool,
}

impl RegisteredUdf {
    /// The call of this function on `args`.
    pub fn call(&self, args: Vec<Expr>) -> Expr {
        udf_call(&self.udf, self.aggregate, args)
    }
}

/// The field names of the struct a grouped-aggregate function's rows arrive in.
pub fn aggregate_field_name(i: usize) -> String {
    format!("a{i}")
}

/// The function of a grouped-aggregate call [`udf_call`] built, if `e` is one.
pub fn group_call(e: &Expr) -> Option<&ScalarUdf> {
    match e {
        Expr::Udf { udf, args } => match args.as_slice() {
            [Expr::Aggregate { name, args, .. }] if name == "collect_list" => match args.as_slice()
            {
                [Expr::Function { name, args }]
                    if name == "named_struct"
                        && args.first()
                            == Some(&Expr::Literal(Literal::string(&aggregate_field_name(0)))) =>
                {
                    Some(udf)
                }
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// `udf(args)`; for a grouped-aggregate function, its call on each group's argument rows,
/// named as Spark names the call (`mean_udf(v)`).
pub fn udf_call(udf: &ScalarUdf, aggregate: bool, args: Vec<Expr>) -> Expr {
    if !aggregate {
        return Expr::Udf {
            udf: udf.clone(),
            args,
        };
    }
    // Spark names the call as written, not the collect_list it runs over.
    let name = Expr::Udf {
        udf: udf.clone(),
        args: args.clone(),
    }
    .spark_name();
    let mut fields = Vec::with_capacity(args.len() * 2);
    for (i, a) in args.into_iter().enumerate() {
        fields.push(Expr::Literal(Literal::string(&aggregate_field_name(i))));
        fields.push(a);
    }
    let rows = Expr::Aggregate {
        name: "collect_list".into(),
        args: vec![Expr::Function {
            name: "named_struct".into(),
            args: fields,
        }],
        distinct: false,
        ignore_nulls: false,
    };
    Expr::Written {
        expr: Box::new(Expr::Udf {
            udf: udf.clone(),
            args: vec![rows],
        }),
        name,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use arrow_array::{Array, Int32Array, Int64Array, RecordBatch};
    use arrow_schema::{Field, Schema};

    use super::*;
    use crate::{bind, evaluate, BindContext};

    /// `x * 10` as a bigint, counting its calls; `short` returns one value too few.
    struct Times10 {
        calls: AtomicUsize,
        short: bool,
    }

    impl ScalarUdfImpl for Times10 {
        fn name(&self) -> &str {
            "times10"
        }
        fn return_type(&self) -> &DataType {
            &DataType::Int64
        }
        fn deterministic(&self) -> bool {
            true
        }
        fn invoke(&self, args: &[ArrayRef], num_rows: usize, _: &str) -> Result<ArrayRef> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let a = args[0]
                .as_any()
                .downcast_ref::<Int32Array>()
                .expect("works");
            let n = if self.short { num_rows - 1 } else { num_rows };
            // Int32 on purpose: the engine casts a castable result to the declared type.
            Ok(Arc::new(
                (0..n)
                    .map(|i| a.is_valid(i).then(|| a.value(i) * 10))
                    .collect::<Int32Array>(),
            ))
        }
    }

    fn udf(short: bool) -> (ScalarUdf, Arc<Times10>) {
        let f = Arc::new(Times10 {
            calls: AtomicUsize::new(0),
            short,
        });
        (ScalarUdf::new(f.clone()), f)
    }

    fn batch() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int32, true)]));
        RecordBatch::try_new(
            schema,
            vec![Arc::new(Int32Array::from(vec![Some(1), None, Some(3)]))],
        )
        .expect("works")
    }

    #[test]
    fn a_call_runs_once_per_batch_and_is_cast_to_its_type() {
        let (f, imp) = udf(false);
        let b = batch();
        let e = udf_call(&f, false, vec![Expr::col("a")]);
        assert_eq!(e.spark_name(), "times10(a)");
        let p = bind(&e, &BindContext::new(&b.schema())).expect("works");
        assert_eq!(p.data_type(), DataType::Int64);
        let out = evaluate(&p, &b)
            .expect("works")
            .into_array(3)
            .expect("works");
        let out = out.as_any().downcast_ref::<Int64Array>().expect("works");
        assert_eq!(out, &Int64Array::from(vec![Some(10), None, Some(30)]));
        assert_eq!(imp.calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_call_over_constants_is_not_folded_while_binding() {
        let (f, imp) = udf(false);
        let b = batch();
        let e = udf_call(&f, false, vec![Expr::Literal(Literal::integer(4))]);
        let p = bind(&e, &BindContext::new(&b.schema())).expect("works");
        assert!(matches!(p, crate::PhysicalExpr::Udf { .. }));
        assert_eq!(imp.calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_result_of_the_wrong_length_is_an_error_naming_the_function() {
        let (f, _) = udf(true);
        let b = batch();
        let p = bind(
            &udf_call(&f, false, vec![Expr::col("a")]),
            &BindContext::new(&b.schema()),
        )
        .expect("works");
        let err = evaluate(&p, &b).expect_err("fails").to_string();
        assert!(
            err.contains("times10") && err.contains("2 values for 3 rows"),
            "{err}"
        );
    }

    #[test]
    fn functions_are_equal_only_to_themselves_and_do_not_serialize() {
        let (f, _) = udf(false);
        let (g, _) = udf(false);
        assert_eq!(f, f.clone());
        assert_ne!(f, g);
        let err = serde_json::to_string(&udf_call(&f, false, vec![])).expect_err("fails");
        assert!(err.to_string().contains("times10"), "{err}");
    }

    #[test]
    fn a_grouped_aggregate_call_collects_each_group_and_keeps_the_written_name() {
        let (f, _) = udf(false);
        let e = udf_call(&f, true, vec![Expr::col("v"), Expr::col("w")]);
        assert_eq!(e.output_name(), "times10(v, w)");
        let mut aggregates = 0;
        e.visit(&mut |x| {
            aggregates +=
                matches!(x, Expr::Aggregate { name, .. } if name == "collect_list") as usize
        });
        assert_eq!(aggregates, 1);
    }
}
