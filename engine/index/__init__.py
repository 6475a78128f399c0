"""eqsearch.engine.index: the indices of a deployment and the documents in them.

`mappings` (index definitions in code), `documents` (ids and the equation and paper documents), `bulk` (bulk
writing with per-document failures), `admin` (versioned indices behind aliases) and `migration` (copy and atomic
swap while searches and writers run). The names callers use are re-exported here.
"""

from eqsearch.engine.index.admin import IndexAdmin, IndexInfo, probe_text_analyzer
from eqsearch.engine.index.bulk import (
    RETRY_STATUSES,
    BulkFailure,
    BulkReport,
    bulk_failure,
    bulk_index,
    bulk_loading_settings,
    current_load_settings,
    is_write_block,
    is_write_block_error,
    retrying,
)
from eqsearch.engine.index.documents import (
    EquationRecord,
    PaperRecord,
    SectionRecord,
    equation_id,
    paper_documents,
    paper_fields,
    paper_key,
    paper_year,
    stored_equation_ids,
    structure_fields,
    with_structure,
    with_vector,
)
from eqsearch.engine.index.errors import IndexOperationError, MigrationError
from eqsearch.engine.index.mappings import (
    INDEX_KINDS,
    MAPPING_VERSIONS,
    SPANS_FIELD,
    STRUCTURE_FIELD,
    VECTOR_FIELD,
    IndexOptions,
    alias_name,
    index_definition,
    parse_version,
    versioned_name,
)
from eqsearch.engine.index.migration import (
    MIGRATION_LOCK_ID,
    MigrationLock,
    MigrationOutcome,
    MigrationReport,
    Rewrite,
    reencode_vectors,
)

__all__ = [
    "INDEX_KINDS",
    "MAPPING_VERSIONS",
    "MIGRATION_LOCK_ID",
    "RETRY_STATUSES",
    "SPANS_FIELD",
    "STRUCTURE_FIELD",
    "VECTOR_FIELD",
    "BulkFailure",
    "BulkReport",
    "EquationRecord",
    "IndexAdmin",
    "IndexInfo",
    "IndexOperationError",
    "IndexOptions",
    "MigrationError",
    "MigrationLock",
    "MigrationOutcome",
    "MigrationReport",
    "PaperRecord",
    "Rewrite",
    "SectionRecord",
    "alias_name",
    "bulk_failure",
    "bulk_index",
    "bulk_loading_settings",
    "current_load_settings",
    "equation_id",
    "index_definition",
    "is_write_block",
    "is_write_block_error",
    "paper_documents",
    "paper_fields",
    "paper_key",
    "paper_year",
    "parse_version",
    "probe_text_analyzer",
    "reencode_vectors",
    "retrying",
    "stored_equation_ids",
    "structure_fields",
    "versioned_name",
    "with_structure",
    "with_vector",
]
