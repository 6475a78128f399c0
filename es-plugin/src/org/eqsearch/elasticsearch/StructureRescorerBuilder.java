/*
 * eqsearch's Elasticsearch plugin: the request side of the structural rescorer.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.index.mapper.MappedFieldType;
import org.elasticsearch.index.query.SearchExecutionContext;
import org.elasticsearch.search.rescore.RescoreContext;
import org.elasticsearch.xcontent.ObjectParser;
import org.elasticsearch.xcontent.ParseField;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

/**
 * {@code "rescore": {"window_size": N, "eqsearch_structure": {...}}}: the query formula's sub-expressions (span hashes,
 * each led by its kind letter, with their sizes in symbols), the query's size, the weight of the match, and whether a
 * shared sub-expression is weighed by the larger of the query's and the candidate's size.
 *
 * <p>Everything is checked here, where the request is read, so that a hostile body gets a 400 that names the field
 * and never reaches a shard: at least one span, at most {@link #MAX_SPANS}, each a non-empty string of at most
 * {@link #MAX_SPAN_LENGTH} characters, one positive size per span, a positive query size, a finite non-negative weight.
 */
public final class StructureRescorerBuilder extends EqsearchRescorerBuilder<StructureRescorerBuilder> {
    public static final String NAME = "eqsearch_structure";
    /** Twice Elasticsearch's default {@code indices.query.bool.max_clause_count} on a small heap: two kinds of 8,192. */
    static final int MAX_SPANS = 16_384;
    static final int MAX_SPAN_LENGTH = 256;
    static final int MAX_SIZE = 1_000_000;
    static final double MAX_WEIGHT = 1_000_000.0;
    static final String DEFAULT_SPANS_FIELD = "structure_spans";
    static final String DEFAULT_SIZE_FIELD = "structure_size";

    private static final ParseField SPANS = new ParseField("spans");
    private static final ParseField SIZES = new ParseField("sizes");
    private static final ParseField QUERY_SIZE = new ParseField("query_size");
    private static final ParseField WEIGHT = new ParseField("weight");
    private static final ParseField CANDIDATE_SIZES = new ParseField("candidate_sizes");
    private static final ParseField SPANS_FIELD = new ParseField("spans_field");
    private static final ParseField SIZE_FIELD = new ParseField("size_field");

    /** What the request body held, before it is checked. */
    private static final class Parsed {
        List<String> spans;
        List<Integer> sizes;
        Integer querySize;
        Double weight;
        boolean candidateSizes;
        String spansField = DEFAULT_SPANS_FIELD;
        String sizeField = DEFAULT_SIZE_FIELD;
    }

    private static final ObjectParser<Parsed, Void> PARSER = new ObjectParser<>(NAME, Parsed::new);
    static {
        PARSER.declareStringArray((p, v) -> p.spans = v, SPANS);
        PARSER.declareIntArray((p, v) -> p.sizes = v, SIZES);
        PARSER.declareInt((p, v) -> p.querySize = v, QUERY_SIZE);
        PARSER.declareDouble((p, v) -> p.weight = v, WEIGHT);
        PARSER.declareBoolean((p, v) -> p.candidateSizes = v, CANDIDATE_SIZES);
        PARSER.declareString((p, v) -> p.spansField = v, SPANS_FIELD);
        PARSER.declareString((p, v) -> p.sizeField = v, SIZE_FIELD);
    }

    private final String[] spans;
    private final int[] sizes;
    private final int querySize;
    private final double weight;
    private final boolean candidateSizes;
    private final String spansField;
    private final String sizeField;

    public StructureRescorerBuilder(
        String[] spans,
        int[] sizes,
        int querySize,
        double weight,
        boolean candidateSizes,
        String spansField,
        String sizeField
    ) {
        check(spans, sizes, querySize, weight, spansField, sizeField);
        this.spans = spans;
        this.sizes = sizes;
        this.querySize = querySize;
        this.weight = weight;
        this.candidateSizes = candidateSizes;
        this.spansField = spansField;
        this.sizeField = sizeField;
    }

    public StructureRescorerBuilder(StreamInput in) throws IOException {
        super(in);
        spans = in.readStringArray();
        sizes = in.readVIntArray();
        querySize = in.readVInt();
        weight = in.readDouble();
        candidateSizes = in.readBoolean();
        spansField = in.readString();
        sizeField = in.readString();
    }

    public static StructureRescorerBuilder fromXContent(XContentParser parser) throws IOException {
        Parsed parsed = PARSER.parse(parser, null);
        if (parsed.spans == null || parsed.sizes == null || parsed.querySize == null || parsed.weight == null) {
            throw new IllegalArgumentException("[" + NAME + "] needs [spans], [sizes], [query_size] and [weight]");
        }
        String[] spans = parsed.spans.toArray(new String[0]);
        int[] sizes = new int[parsed.sizes.size()];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = parsed.sizes.get(i);
        }
        return new StructureRescorerBuilder(
            spans, sizes, parsed.querySize, parsed.weight, parsed.candidateSizes, parsed.spansField, parsed.sizeField
        );
    }

    private static void check(String[] spans, int[] sizes, int querySize, double weight, String spansField, String sizeField) {
        if (spans.length == 0) {
            throw new IllegalArgumentException("[" + NAME + "] [spans] is empty: send at least one sub-expression");
        }
        if (spans.length > MAX_SPANS) {
            throw new IllegalArgumentException("[" + NAME + "] [spans] holds " + spans.length + " sub-expressions, more than " + MAX_SPANS);
        }
        if (sizes.length != spans.length) {
            throw new IllegalArgumentException(
                "[" + NAME + "] [sizes] must give one size per span: " + sizes.length + " sizes for " + spans.length + " spans"
            );
        }
        for (int i = 0; i < spans.length; i++) {
            String span = spans[i];
            if (span == null || span.isEmpty() || span.length() > MAX_SPAN_LENGTH) {
                throw new IllegalArgumentException(
                    "[" + NAME + "] span " + i + " must be a string of 1 to " + MAX_SPAN_LENGTH + " characters"
                );
            }
            if (sizes[i] < 1 || sizes[i] > MAX_SIZE) {
                throw new IllegalArgumentException("[" + NAME + "] size " + i + " must lie in 1.." + MAX_SIZE + ", got " + sizes[i]);
            }
        }
        if (querySize < 1 || querySize > MAX_SIZE) {
            throw new IllegalArgumentException("[" + NAME + "] [query_size] must lie in 1.." + MAX_SIZE + ", got " + querySize);
        }
        if (Double.isFinite(weight) == false || weight < 0 || weight > MAX_WEIGHT) {
            throw new IllegalArgumentException("[" + NAME + "] [weight] must be a number in [0, " + MAX_WEIGHT + "], got " + weight);
        }
        if (spansField == null || spansField.isEmpty() || sizeField == null || sizeField.isEmpty()) {
            throw new IllegalArgumentException("[" + NAME + "] [spans_field] and [size_field] must be field names");
        }
    }

    @Override
    protected void doWriteTo(StreamOutput out) throws IOException {
        out.writeStringArray(spans);
        out.writeVIntArray(sizes);
        out.writeVInt(querySize);
        out.writeDouble(weight);
        out.writeBoolean(candidateSizes);
        out.writeString(spansField);
        out.writeString(sizeField);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    protected void doXContent(XContentBuilder builder, ToXContent.Params params) throws IOException {
        builder.startObject(NAME);
        builder.array(SPANS.getPreferredName(), spans);
        builder.array(SIZES.getPreferredName(), sizes);
        builder.field(QUERY_SIZE.getPreferredName(), querySize);
        builder.field(WEIGHT.getPreferredName(), weight);
        builder.field(CANDIDATE_SIZES.getPreferredName(), candidateSizes);
        builder.field(SPANS_FIELD.getPreferredName(), spansField);
        builder.field(SIZE_FIELD.getPreferredName(), sizeField);
        builder.endObject();
    }

    @Override
    protected RescoreContext innerBuildContext(int windowSize, SearchExecutionContext context) throws IOException {
        MappedFieldType spansType = context.isFieldMapped(spansField) ? context.getFieldType(spansField) : null;
        if (spansType != null && (spansType.typeName().equals("keyword") == false || spansType.isSearchable() == false)) {
            throw new IllegalArgumentException(
                "[" + NAME + "] [spans_field] [" + spansField + "] is a [" + spansType.typeName() + "] field; it must be an indexed keyword"
            );
        }
        MappedFieldType sizeType = context.isFieldMapped(sizeField) ? context.getFieldType(sizeField) : null;
        if (candidateSizes && sizeType != null) {
            String type = sizeType.typeName();
            boolean whole = type.equals("integer") || type.equals("long") || type.equals("short") || type.equals("byte");
            if (whole == false || sizeType.hasDocValues() == false) {
                throw new IllegalArgumentException(
                    "[" + NAME + "] [size_field] [" + sizeField + "] is a [" + type + "] field; it must be a whole number with doc values"
                );
            }
        }
        return new StructureRescorer.Context(
            windowSize,
            StructureMatch.of(spans, sizes, querySize, weight),
            spansType == null ? null : spansField,
            candidateSizes ? (sizeType == null ? null : sizeField) : null,
            candidateSizes,
            querySize
        );
    }

    @Override
    public boolean equals(Object obj) {
        if (super.equals(obj) == false) {
            return false;
        }
        StructureRescorerBuilder other = (StructureRescorerBuilder) obj;
        return Arrays.equals(spans, other.spans)
            && Arrays.equals(sizes, other.sizes)
            && querySize == other.querySize
            && weight == other.weight
            && candidateSizes == other.candidateSizes
            && spansField.equals(other.spansField)
            && sizeField.equals(other.sizeField);
    }

    @Override
    public int hashCode() {
        return Objects.hash(super.hashCode(), Arrays.hashCode(spans), Arrays.hashCode(sizes), querySize, weight, candidateSizes, spansField, sizeField);
    }
}
