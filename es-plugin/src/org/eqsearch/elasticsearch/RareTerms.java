/*
 * eqsearch's Elasticsearch plugin: which of a formula's structural terms its first stage matches, chosen in the shard.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;
import java.util.Objects;

import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.xcontent.ConstructingObjectParser;
import org.elasticsearch.xcontent.ParseField;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * The rule by which the structural list's first stage keeps the query's rare terms, applied to the shard's own document
 * frequencies: eqsearch's {@code structure_query.rarest_terms}, which the client applied to the frequencies of a
 * {@code _termvectors} request, computed with the same double arithmetic. The distinct terms found in at most
 * {@code max_share} of the documents with the field, then more of the rarest (ties in the query's order) until there
 * are {@code at_least} and the last one kept alone is in {@code min_matches} documents; terms no document holds are
 * left out; none is chosen (every term matched) when that would keep them all. The {@code eqsearch_terms} query
 * ({@link TermsQueryBuilder}) matches the chosen terms, and the {@code eqsearch_bm25} rescorer adds the others' BM25 to
 * the window: both ask the same searcher, so they split the terms the same way.
 *
 * @param maxShare the largest share of the documents a term may be in and still count as rare, in (0, 1]
 * @param minMatches how many documents the least rare term kept must be in, at least 0
 * @param atLeast how many terms are kept at least (when the query has them), at least 1
 */
record RareTerms(double maxShare, long minMatches, int atLeast) {
    static final String NAME = "rare";
    static final long MAX_MIN_MATCHES = 1L << 40;
    static final int MAX_AT_LEAST = 1_000_000;

    private static final ParseField MAX_SHARE = new ParseField("max_share");
    private static final ParseField MIN_MATCHES = new ParseField("min_matches");
    private static final ParseField AT_LEAST = new ParseField("at_least");

    static final ConstructingObjectParser<RareTerms, Void> PARSER = new ConstructingObjectParser<>(
        NAME,
        args -> new RareTerms((Double) args[0], (Long) args[1], (Integer) args[2])
    );
    static {
        PARSER.declareDouble(ConstructingObjectParser.constructorArg(), MAX_SHARE);
        PARSER.declareLong(ConstructingObjectParser.constructorArg(), MIN_MATCHES);
        PARSER.declareInt(ConstructingObjectParser.constructorArg(), AT_LEAST);
    }

    RareTerms {
        if ((maxShare > 0 && maxShare <= 1) == false) {
            throw new IllegalArgumentException("[" + NAME + "] [max_share] must be a share in (0, 1], got " + maxShare);
        }
        if (minMatches < 0 || minMatches > MAX_MIN_MATCHES) {
            throw new IllegalArgumentException("[" + NAME + "] [min_matches] must be in [0, " + MAX_MIN_MATCHES + "], got " + minMatches);
        }
        if (atLeast < 1 || atLeast > MAX_AT_LEAST) {
            throw new IllegalArgumentException("[" + NAME + "] [at_least] must be in [1, " + MAX_AT_LEAST + "], got " + atLeast);
        }
    }

    /** A rule or none, as {@link #write} wrote it. */
    static RareTerms read(StreamInput in) throws IOException {
        return in.readBoolean() ? readRule(in) : null;
    }

    /** A rule or none. */
    static void write(StreamOutput out, RareTerms rare) throws IOException {
        out.writeBoolean(rare != null);
        if (rare != null) {
            rare.writeRule(out);
        }
    }

    /** A rule, as {@link #writeRule} wrote it. */
    static RareTerms readRule(StreamInput in) throws IOException {
        return new RareTerms(in.readDouble(), in.readVLong(), in.readVInt());
    }

    void writeRule(StreamOutput out) throws IOException {
        out.writeDouble(maxShare);
        out.writeVLong(minMatches);
        out.writeVInt(atLeast);
    }

    /** Writes the rule as the object {@code key} of a request. */
    void toXContent(XContentBuilder builder, String key) throws IOException {
        builder.startObject(key);
        builder.field(MAX_SHARE.getPreferredName(), maxShare);
        builder.field(MIN_MATCHES.getPreferredName(), minMatches);
        builder.field(AT_LEAST.getPreferredName(), atLeast);
        builder.endObject();
    }

    /**
     * Which of the distinct terms (in the query's order, with these document frequencies in the shard, where the field
     * is in {@code documents} documents) are rare; null when every term is kept (then the first stage matches them all
     * and no term is left for the rescore).
     */
    boolean[] choose(long[] docFreqs, long documents) {
        double[] shares = new double[docFreqs.length];
        int present = 0;
        for (int i = 0; i < docFreqs.length; i++) {
            shares[i] = docFreqs[i] / (double) Math.max(documents, 1L);
            present += shares[i] > 0 ? 1 : 0;
        }
        Integer[] order = new Integer[present];
        for (int i = 0, at = 0; i < docFreqs.length; i++) {
            if (shares[i] > 0) {
                order[at++] = i;
            }
        }
        Arrays.sort(order, (a, b) -> Double.compare(shares[a], shares[b])); // stable: ties in the query's order
        int kept = 0;
        for (Integer term : order) {
            boolean enough = kept >= atLeast && shares[order[kept - 1]] * documents >= minMatches;
            if (shares[term] > maxShare && enough) {
                break;
            }
            kept++;
        }
        if (kept == order.length) {
            return null;
        }
        boolean[] rare = new boolean[docFreqs.length];
        for (int i = 0; i < kept; i++) {
            rare[order[i]] = true;
        }
        return rare;
    }

    @Override
    public boolean equals(Object obj) {
        return obj instanceof RareTerms other
            && Double.compare(maxShare, other.maxShare) == 0
            && minMatches == other.minMatches
            && atLeast == other.atLeast;
    }

    @Override
    public int hashCode() {
        return Objects.hash(maxShare, minMatches, atLeast);
    }
}
