//! Load errors: what was wrong and where.

use std::fmt;

/// A 1-based line and column (columns count characters) in a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub column: u32,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Why a document could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// The text is not well-formed XML.
    #[error("{position}: malformed XML: {message}")]
    Xml {
        /// Where the parser stopped.
        position: Position,
        /// The parser's message.
        message: String,
    },
    /// Well-formed XML that is not a valid SCXML document (unknown element,
    /// missing or bad attribute, unknown transition target, ...).
    #[error("{position}: invalid SCXML: {message}")]
    Invalid {
        /// The element at fault.
        position: Position,
        /// What is wrong with it.
        message: String,
    },
    /// A file named by `src` (a script or data source, or the document
    /// itself) could not be read.
    #[error("{}cannot read {path}: {message}", position.map(|p| format!("{p}: ")).unwrap_or_default())]
    Io {
        /// The element whose `src` named it, if any.
        position: Option<Position>,
        /// The path as resolved.
        path: String,
        /// The operating system's message.
        message: String,
    },
}

impl LoadError {
    pub(crate) fn xml(position: Position, message: impl Into<String>) -> Self {
        LoadError::Xml {
            position,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(position: Position, message: impl Into<String>) -> Self {
        LoadError::Invalid {
            position,
            message: message.into(),
        }
    }

    /// Where in the document the error is, if it is in one.
    pub fn position(&self) -> Option<Position> {
        match self {
            LoadError::Xml { position, .. } | LoadError::Invalid { position, .. } => {
                Some(*position)
            }
            LoadError::Io { position, .. } => *position,
        }
    }
}
