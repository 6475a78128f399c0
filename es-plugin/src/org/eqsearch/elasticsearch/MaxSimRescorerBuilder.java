/*
 * eqsearch's Elasticsearch plugin: the request side of the MaxSim rescorer.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;
import java.util.Objects;

import org.elasticsearch.TransportVersion;
import org.elasticsearch.TransportVersions;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.index.mapper.MappedFieldType;
import org.elasticsearch.index.query.QueryRewriteContext;
import org.elasticsearch.index.query.SearchExecutionContext;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.search.rescore.RescorerBuilder;
import org.elasticsearch.xcontent.ObjectParser;
import org.elasticsearch.xcontent.ParseField;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

/**
 * {@code "rescore": {"window_size": N, "eqsearch_maxsim": {"query_vectors": BASE64, "dims": D, "symmetric": false}}}:
 * the query formula's node vectors (float32, little-endian, D per node, any number of nodes up to {@link #MAX_NODES}),
 * scored against each candidate's stored node vectors ({@link NodeVectors}); the candidate's score becomes its MaxSim
 * score. Checked here, where the request is read: a hostile body gets a 400 that names the field.
 */
public final class MaxSimRescorerBuilder extends RescorerBuilder<MaxSimRescorerBuilder> {
    public static final String NAME = "eqsearch_maxsim";
    static final int MAX_DIMS = 4096;
    static final int MAX_NODES = 2048;
    static final String DEFAULT_FIELD = "node_vectors";

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

    private static final ObjectParser<Parsed, Void> PARSER = new ObjectParser<>(NAME, Parsed::new);
    static {
        PARSER.declareString((p, v) -> p.vectors = v, QUERY_VECTORS);
        PARSER.declareInt((p, v) -> p.dims = v, DIMS);
        PARSER.declareBoolean((p, v) -> p.symmetric = v, SYMMETRIC);
        PARSER.declareString((p, v) -> p.field = v, FIELD);
    }

    private final float[] query; // nodes x dims, each row of unit length
    private final int dims;
    private final boolean symmetric;
    private final String field;

    public MaxSimRescorerBuilder(float[] query, int dims, boolean symmetric, String field) {
        this.query = query;
        this.dims = dims;
        this.symmetric = symmetric;
        this.field = field;
    }

    public MaxSimRescorerBuilder(StreamInput in) throws IOException {
        super(in);
        query = in.readFloatArray();
        dims = in.readVInt();
        symmetric = in.readBoolean();
        field = in.readString();
    }

    public static MaxSimRescorerBuilder fromXContent(XContentParser parser) throws IOException {
        Parsed parsed = PARSER.parse(parser, null);
        if (parsed.vectors == null || parsed.dims == null) {
            throw new IllegalArgumentException("[" + NAME + "] needs [query_vectors] and [dims]");
        }
        int dims = parsed.dims;
        if (dims < 1 || dims > MAX_DIMS) {
            throw new IllegalArgumentException("[" + NAME + "] [dims] must lie in 1.." + MAX_DIMS + ", got " + dims);
        }
        byte[] raw;
        try {
            raw = Base64.getDecoder().decode(parsed.vectors);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("[" + NAME + "] [query_vectors] is not base64: " + e.getMessage());
        }
        int nodes = raw.length / (4 * dims);
        if (raw.length == 0 || raw.length % (4 * dims) != 0 || nodes > MAX_NODES) {
            throw new IllegalArgumentException(
                "[" + NAME + "] [query_vectors] must hold 1 to " + MAX_NODES + " vectors of " + dims + " float32 values, got "
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
                    throw new IllegalArgumentException("[" + NAME + "] [query_vectors] holds a value that is not a finite number");
                }
                norm += (double) value * value;
            }
            float scale = norm > 0 ? (float) (1.0 / Math.sqrt(norm)) : 0f;
            for (int d = 0; d < dims; d++) {
                query[node * dims + d] *= scale;
            }
        }
        if (parsed.field == null || parsed.field.isEmpty()) {
            throw new IllegalArgumentException("[" + NAME + "] [field] must be a field name");
        }
        return new MaxSimRescorerBuilder(query, dims, parsed.symmetric, parsed.field);
    }

    @Override
    protected void doWriteTo(StreamOutput out) throws IOException {
        out.writeFloatArray(query);
        out.writeVInt(dims);
        out.writeBoolean(symmetric);
        out.writeString(field);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    public TransportVersion getMinimalSupportedVersion() {
        return TransportVersions.V_8_0_0;
    }

    @Override
    public RescorerBuilder<MaxSimRescorerBuilder> rewrite(QueryRewriteContext ctx) {
        return this;
    }

    @Override
    protected void doXContent(XContentBuilder builder, ToXContent.Params params) throws IOException {
        ByteBuffer raw = ByteBuffer.allocate(query.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        raw.asFloatBuffer().put(query);
        builder.startObject(NAME);
        builder.field(QUERY_VECTORS.getPreferredName(), Base64.getEncoder().encodeToString(raw.array()));
        builder.field(DIMS.getPreferredName(), dims);
        builder.field(SYMMETRIC.getPreferredName(), symmetric);
        builder.field(FIELD.getPreferredName(), field);
        builder.endObject();
    }

    @Override
    protected RescoreContext innerBuildContext(int windowSize, SearchExecutionContext context) throws IOException {
        MappedFieldType type = context.isFieldMapped(field) ? context.getFieldType(field) : null;
        if (type != null && (type.typeName().equals("binary") == false || type.hasDocValues() == false)) {
            throw new IllegalArgumentException(
                "[" + NAME + "] [field] [" + field + "] is a [" + type.typeName() + "] field; it must be binary with doc values"
            );
        }
        return new MaxSimRescorer.Context(windowSize, query, dims, symmetric, type == null ? null : field);
    }

    @Override
    public boolean equals(Object obj) {
        if (super.equals(obj) == false) {
            return false;
        }
        MaxSimRescorerBuilder other = (MaxSimRescorerBuilder) obj;
        return java.util.Arrays.equals(query, other.query) && dims == other.dims && symmetric == other.symmetric && field.equals(other.field);
    }

    @Override
    public int hashCode() {
        return Objects.hash(super.hashCode(), java.util.Arrays.hashCode(query), dims, symmetric, field);
    }
}
