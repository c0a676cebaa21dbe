//! What the rows of a run kind measure and how they read in `compare`:
//! each kind's view declares its own ([`Kind`]), and the compare view asks
//! it (kept apart from the view so that the kinds' views can name it).

/// What the rows of a run kind measure and how they read.
#[derive(Debug, Clone)]
pub struct Kind {
    pub name: &'static str,
    /// The cost's unit as drawn, e.g. "CPU µs".
    pub unit: &'static str,
    /// What one sample's cost is, for the notes.
    pub cost: &'static str,
    /// The drawn figure per unit of cost (1e-3 for nanoseconds drawn as µs).
    pub scale: f64,
    /// What the backend column is called ("backend", "engine").
    pub backend_header: &'static str,
    pub axis_headers: Vec<&'static str>,
    /// Notes of this kind under the table (how its rows were tested).
    pub notes: Vec<&'static str>,
    /// True if and only if the costs are counts (instructions, bytes):
    /// rows are tested on the range of every pair, not order statistics.
    pub counted: bool,
}

impl Kind {
    /// The rows of the kind `name`, with the backend column called
    /// `backend_header` and the scenario's axes as `axis_headers`; its cost
    /// is said with [`Kind::on_time`] or [`Kind::on_counts`].
    pub fn rows(
        name: &'static str,
        backend_header: &'static str,
        axis_headers: Vec<&'static str>,
    ) -> Self {
        Self {
            name,
            unit: "",
            cost: "",
            scale: 1.0,
            backend_header,
            axis_headers,
            notes: Vec::new(),
            counted: false,
        }
    }

    /// Compared on a time: drawn in `unit` (`scale` per unit of cost), a
    /// sample's cost being `cost`.
    pub fn on_time(self, unit: &'static str, cost: &'static str, scale: f64) -> Self {
        Self {
            unit,
            cost,
            scale,
            counted: false,
            ..self
        }
    }

    /// Compared on counts (instructions, bytes): as [`Kind::on_time`], the
    /// rows tested on the range of every pair.
    pub fn on_counts(self, unit: &'static str, cost: &'static str, scale: f64) -> Self {
        Self {
            counted: true,
            ..self.on_time(unit, cost, scale)
        }
    }

    /// With these notes under the table.
    pub fn with_notes(self, notes: Vec<&'static str>) -> Self {
        Self { notes, ..self }
    }
}
