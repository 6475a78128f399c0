/*
 * eqsearch's Elasticsearch plugin: what a MaxSim request holds, read and checked once for the rescorer and the fetch
 * phase alike, and the scoring of one candidate against it.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Base64;
import java.util.Objects;

import org.apache.lucene.index.BinaryDocValues;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.index.mapper.MappedFieldType;
import org.elasticsearch.index.query.SearchExecutionContext;
import org.elasticsearch.xcontent.ObjectParser;
import org.elasticsearch.xcontent.ParseField;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

/**
 * {@code {"query_vectors": BASE64, "dims": D, "symmetric": false, "field": "node_vectors"}}: the query formula's node
 * vectors (float32, little-endian, D per node, 1 to {@link #MAX_NODES} nodes), each scaled to unit length, and the
 * binary doc-values field that holds the candidates' ({@link NodeVectors}). The {@code eqsearch_maxsim} rescorer
 * ({@link MaxSimRescorerBuilder}) and the {@code eqsearch_maxsim} search extension ({@link MaxSimFetchBuilder}) both
 * carry one, so that both score a candidate the same way to the last bit ({@link Scorer}). Checked where the request
 * is read: a hostile body gets a 400 that names the field.
 */
final class MaxSimRequest {
    static final int MAX_DIMS = 4096;
    static final int MAX_NODES = 2048;
    static final String DEFAULT_FIELD = "node_vectors";
    /** The score of a candidate without node vectors (cosines lie in [-1, 1]). */
    static final float MISSING = -2f;

    private static final ParseField QUERY_VECTORS = new ParseField("query_vectors");
    private static final ParseField DIMS = new ParseField("dims");
    private static final ParseField SYMMETRIC = new ParseField("symmetric");
    private static final ParseField FIELD = new ParseField("field");

    private static final class Parsed {
        String vectors;
        Integer dims;
        boolean symmetric;
        String field = DEFAULT_FIELD;
    }

    private static final ObjectParser<Parsed, String> PARSER = new ObjectParser<>("eqsearch_maxsim", Parsed::new);
    static {
        PARSER.declareString((p, v) -> p.vectors = v, QUERY_VECTORS);
        PARSER.declareInt((p, v) -> p.dims = v, DIMS);
        PARSER.declareBoolean((p, v) -> p.symmetric = v, SYMMETRIC);
        PARSER.declareString((p, v) -> p.field = v, FIELD);
    }

    final float[] query; // nodes x dims, each row of unit length
    final int dims;
    final boolean symmetric;
    final String field;

    MaxSimRequest(float[] query, int dims, boolean symmetric, String field) {
        this.query = query;
        this.dims = dims;
        this.symmetric = symmetric;
        this.field = field;
    }

    MaxSimRequest(StreamInput in) throws IOException {
        query = in.readFloatArray();
        dims = in.readVInt();
        symmetric = in.readBoolean();
        field = in.readString();
    }

    void writeTo(StreamOutput out) throws IOException {
        out.writeFloatArray(query);
        out.writeVInt(dims);
        out.writeBoolean(symmetric);
        out.writeString(field);
    }

    /** Reads the request's object (the parser at its start); {@code name} names it in the errors. */
    static MaxSimRequest parse(XContentParser parser, String name) throws IOException {
        Parsed parsed = PARSER.parse(parser, name);
        if (parsed.vectors == null || parsed.dims == null) {
            throw new IllegalArgumentException("[" + name + "] needs [query_vectors] and [dims]");
        }
        int dims = parsed.dims;
        if (dims < 1 || dims > MAX_DIMS) {
            throw new IllegalArgumentException("[" + name + "] [dims] must lie in 1.." + MAX_DIMS + ", got " + dims);
        }
        byte[] raw;
        try {
            raw = Base64.getDecoder().decode(parsed.vectors);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("[" + name + "] [query_vectors] is not base64: " + e.getMessage());
        }
        int nodes = raw.length / (4 * dims);
        if (raw.length == 0 || raw.length % (4 * dims) != 0 || nodes > MAX_NODES) {
            throw new IllegalArgumentException(
                "[" + name + "] [query_vectors] must hold 1 to " + MAX_NODES + " vectors of " + dims + " float32 values, got "
                    + raw.length + " bytes"
            );
        }
        float[] query = new float[nodes * dims];
        ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(query);
        for (int node = 0; node < nodes; node++) {
            double norm = 0;
            for (int d = 0; d < dims; d++) {
                float value = query[node * dims + d];
                if (Float.isFinite(value) == false) {
                    throw new IllegalArgumentException("[" + name + "] [query_vectors] holds a value that is not a finite number");
                }
                norm += (double) value * value;
            }
            float scale = norm > 0 ? (float) (1.0 / Math.sqrt(norm)) : 0f;
            for (int d = 0; d < dims; d++) {
                query[node * dims + d] *= scale;
            }
        }
        if (parsed.field == null || parsed.field.isEmpty()) {
            throw new IllegalArgumentException("[" + name + "] [field] must be a field name");
        }
        return new MaxSimRequest(query, dims, parsed.symmetric, parsed.field);
    }

    /** Writes the request's fields into an object already started. */
    void toXContentFields(XContentBuilder builder) throws IOException {
        ByteBuffer raw = ByteBuffer.allocate(query.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        raw.asFloatBuffer().put(query);
        builder.field(QUERY_VECTORS.getPreferredName(), Base64.getEncoder().encodeToString(raw.array()));
        builder.field(DIMS.getPreferredName(), dims);
        builder.field(SYMMETRIC.getPreferredName(), symmetric);
        builder.field(FIELD.getPreferredName(), field);
    }

    /**
     * The scorer of this request on a shard: the field when the shard maps it (null otherwise: every candidate then
     * scores {@link #MISSING}); a field of another kind than binary with doc values is refused with the request's
     * {@code name}.
     */
    Scorer scorer(SearchExecutionContext context, String name) {
        MappedFieldType type = context.isFieldMapped(field) ? context.getFieldType(field) : null;
        if (type != null && (type.typeName().equals("binary") == false || type.hasDocValues() == false)) {
            throw new IllegalArgumentException(
                "[" + name + "] [field] [" + field + "] is a [" + type.typeName() + "] field; it must be binary with doc values"
            );
        }
        return new Scorer(query, dims, symmetric, type == null ? null : field);
    }

    /** The query's rows rounded to int8 as the candidates' are stored, and the MaxSim of one candidate against them. */
    static final class Scorer {
        final int dims;
        final String field; // null: not mapped here
        private final MaxSimKernel kernel;

        Scorer(float[] query, int dims, boolean symmetric, String field) {
            byte[][] rows = new byte[query.length / dims][dims]; // the unit rows rounded to int8 (x 127), as stored
            for (int i = 0; i < query.length; i++) {
                rows[i / dims][i % dims] = (byte) Math.max(-127, Math.min(127, Math.round(query[i] * 127f)));
            }
            this.kernel = MaxSimKernel.of(rows, NodeVectors.inverseNorms(rows), dims, symmetric);
            this.dims = dims;
            this.field = field;
        }

        /** The candidate {@code doc}'s MaxSim score ({@code values}: the field's doc values in its segment, or null),
         * {@link #MISSING} when it has no node vectors of these dims. */
        float score(BinaryDocValues values, int doc) throws IOException {
            if (values == null || values.advanceExact(doc) == false) {
                return MISSING;
            }
            NodeVectors candidate = NodeVectors.read(values.binaryValue(), dims);
            if (candidate == null || candidate.nodes == 0) {
                return MISSING;
            }
            return kernel.score(candidate);
        }
    }

    @Override
    public boolean equals(Object obj) {
        if (obj instanceof MaxSimRequest other) {
            return Arrays.equals(query, other.query) && dims == other.dims && symmetric == other.symmetric && field.equals(other.field);
        }
        return false;
    }

    @Override
    public int hashCode() {
        return Objects.hash(Arrays.hashCode(query), dims, symmetric, field);
    }
}
