/*
 * eqsearch's Elasticsearch plugin: the request side of the forward-index BM25 rescorer.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

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
 * {@code "rescore": {"window_size": N, "eqsearch_bm25": {"terms": [...], "boosts": [...], "mode": "add"}}}: the BM25 of
 * the given terms of the structural field (each once, its count in the query as its boost, as eqsearch's {@code term}
 * clauses carry it) for each window candidate, from its forward index ({@link Bm25Rescorer}); {@code mode}
 * {@code add} adds it to the candidate's score, {@code replace} puts it in its place. The document frequencies come
 * from the shard, so the request carries none.
 *
 * <p>With {@code "except_rare": {"max_share": ..., "min_matches": ..., "at_least": ...}} (mode {@code add}), the terms
 * the shard does not find rare by that rule ({@link RareTerms}): the other terms of an {@code eqsearch_terms} first
 * stage with the same {@code rare}, chosen in the same searcher, so that the window gets the BM25 of every term; the
 * terms then come in the query's order, as the query has them, since the rule breaks its ties by that order.
 *
 * <p>Checked here, where the request is read: a hostile body gets a 400 that names the field and never reaches a
 * shard: 1 to {@link #MAX_TERMS} distinct terms of 1 to {@link #MAX_TERM_LENGTH} characters, one finite boost in
 * (0, {@link #MAX_BOOST}] per term (all 1 when left out), a known mode, field names, the rule's bounds.
 */
public final class Bm25RescorerBuilder extends EqsearchRescorerBuilder<Bm25RescorerBuilder> {
    public static final String NAME = "eqsearch_bm25";
    static final int MAX_TERMS = 16_384;
    static final int MAX_TERM_LENGTH = 1_024;
    static final float MAX_BOOST = 1_000_000f;
    static final String DEFAULT_FIELD = "structure";
    static final String DEFAULT_FORWARD_FIELD = "structure_terms";
    static final String ADD = "add";
    static final String REPLACE = "replace";

    private static final ParseField TERMS = new ParseField("terms");
    private static final ParseField BOOSTS = new ParseField("boosts");
    private static final ParseField MODE = new ParseField("mode");
    private static final ParseField FIELD = new ParseField("field");
    private static final ParseField FORWARD_FIELD = new ParseField("forward_field");
    private static final ParseField EXCEPT_RARE = new ParseField("except_rare");

    private static final class Parsed {
        List<String> terms;
        List<Float> boosts;
        String mode = ADD;
        String field = DEFAULT_FIELD;
        String forwardField = DEFAULT_FORWARD_FIELD;
        RareTerms exceptRare;
    }

    private static final ObjectParser<Parsed, Void> PARSER = new ObjectParser<>(NAME, Parsed::new);
    static {
        PARSER.declareStringArray((p, v) -> p.terms = v, TERMS);
        PARSER.declareFloatArray((p, v) -> p.boosts = v, BOOSTS);
        PARSER.declareString((p, v) -> p.mode = v, MODE);
        PARSER.declareString((p, v) -> p.field = v, FIELD);
        PARSER.declareString((p, v) -> p.forwardField = v, FORWARD_FIELD);
        PARSER.declareObject((p, v) -> p.exceptRare = v, (parser, c) -> RareTerms.PARSER.parse(parser, null), EXCEPT_RARE);
    }

    private final String[] terms;
    private final float[] boosts;
    private final boolean replace;
    private final String field;
    private final String forwardField;
    private final RareTerms exceptRare;

    public Bm25RescorerBuilder(String[] terms, float[] boosts, boolean replace, String field, String forwardField, RareTerms exceptRare) {
        check(NAME, terms, boosts, field);
        if (forwardField == null || forwardField.isEmpty()) {
            throw new IllegalArgumentException("[" + NAME + "] [field] and [forward_field] must be field names");
        }
        if (exceptRare != null && replace) {
            throw new IllegalArgumentException("[" + NAME + "] [except_rare] adds the other terms' BM25: it needs [mode] [" + ADD + "]");
        }
        this.terms = terms;
        this.boosts = boosts;
        this.replace = replace;
        this.field = field;
        this.forwardField = forwardField;
        this.exceptRare = exceptRare;
    }

    /** Reads the request as {@link #doWriteTo} wrote it: one form between nodes, since every node runs one version. */
    public Bm25RescorerBuilder(StreamInput in) throws IOException {
        super(in);
        terms = in.readStringArray();
        boosts = in.readFloatArray();
        replace = in.readBoolean();
        field = in.readString();
        forwardField = in.readString();
        exceptRare = RareTerms.read(in);
    }

    public static Bm25RescorerBuilder fromXContent(XContentParser parser) throws IOException {
        Parsed parsed = PARSER.parse(parser, null);
        if (parsed.terms == null) {
            throw new IllegalArgumentException("[" + NAME + "] needs [terms]");
        }
        String[] terms = parsed.terms.toArray(new String[0]);
        float[] boosts = boosts(NAME, terms, parsed.boosts);
        if (ADD.equals(parsed.mode) == false && REPLACE.equals(parsed.mode) == false) {
            throw new IllegalArgumentException("[" + NAME + "] [mode] must be [" + ADD + "] or [" + REPLACE + "], got [" + parsed.mode + "]");
        }
        return new Bm25RescorerBuilder(terms, boosts, REPLACE.equals(parsed.mode), parsed.field, parsed.forwardField, parsed.exceptRare);
    }

    /** One boost per term from a request's {@code boosts} (all 1 when left out). */
    static float[] boosts(String name, String[] terms, List<Float> given) {
        float[] boosts = new float[terms.length];
        if (given == null) {
            Arrays.fill(boosts, 1f);
        } else if (given.size() != terms.length) {
            throw new IllegalArgumentException(
                "[" + name + "] [boosts] must give one boost per term: " + given.size() + " boosts for " + terms.length + " terms"
            );
        } else {
            for (int i = 0; i < boosts.length; i++) {
                boosts[i] = given.get(i);
            }
        }
        return boosts;
    }

    /** The checks of a request's terms, boosts and field (the {@code eqsearch_terms} query's too), each a 400. */
    static void check(String name, String[] terms, float[] boosts, String field) {
        if (terms.length == 0) {
            throw new IllegalArgumentException("[" + name + "] [terms] is empty: send at least one term");
        }
        if (terms.length > MAX_TERMS) {
            throw new IllegalArgumentException("[" + name + "] [terms] holds " + terms.length + " terms, more than " + MAX_TERMS);
        }
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < terms.length; i++) {
            String term = terms[i];
            if (term == null || term.isEmpty() || term.length() > MAX_TERM_LENGTH) {
                throw new IllegalArgumentException("[" + name + "] term " + i + " must be a string of 1 to " + MAX_TERM_LENGTH + " characters");
            }
            if (seen.add(term) == false) {
                throw new IllegalArgumentException(
                    "[" + name + "] term " + i + " is given twice: send each term once, with its count as its boost"
                );
            }
            if (Float.isFinite(boosts[i]) == false || boosts[i] <= 0 || boosts[i] > MAX_BOOST) {
                throw new IllegalArgumentException("[" + name + "] boost " + i + " must be a number in (0, " + MAX_BOOST + "], got " + boosts[i]);
            }
        }
        if (field == null || field.isEmpty()) {
            throw new IllegalArgumentException("[" + name + "] [field] must be a field name");
        }
    }

    @Override
    protected void doWriteTo(StreamOutput out) throws IOException {
        out.writeStringArray(terms);
        out.writeFloatArray(boosts);
        out.writeBoolean(replace);
        out.writeString(field);
        out.writeString(forwardField);
        RareTerms.write(out, exceptRare);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    protected void doXContent(XContentBuilder builder, ToXContent.Params params) throws IOException {
        builder.startObject(NAME);
        builder.array(TERMS.getPreferredName(), terms);
        builder.array(BOOSTS.getPreferredName(), boosts);
        builder.field(MODE.getPreferredName(), replace ? REPLACE : ADD);
        builder.field(FIELD.getPreferredName(), field);
        builder.field(FORWARD_FIELD.getPreferredName(), forwardField);
        if (exceptRare != null) {
            exceptRare.toXContent(builder, EXCEPT_RARE.getPreferredName());
        }
        builder.endObject();
    }

    @Override
    protected RescoreContext innerBuildContext(int windowSize, SearchExecutionContext context) throws IOException {
        MappedFieldType type = context.isFieldMapped(field) ? context.getFieldType(field) : null;
        if (type != null && (type.typeName().equals("text") == false || type.isSearchable() == false)) {
            throw new IllegalArgumentException(
                "[" + NAME + "] [field] [" + field + "] is a [" + type.typeName() + "] field; it must be an indexed text field"
            );
        }
        MappedFieldType forwardType = context.isFieldMapped(forwardField) ? context.getFieldType(forwardField) : null;
        if (forwardType != null && (forwardType.typeName().equals("binary") == false || forwardType.hasDocValues() == false)) {
            throw new IllegalArgumentException(
                "[" + NAME + "] [forward_field] [" + forwardField + "] is a [" + forwardType.typeName()
                    + "] field; it must be binary with doc values"
            );
        }
        return new Bm25Rescorer.Context(
            windowSize,
            terms,
            boosts,
            type == null ? null : field,
            forwardType == null ? null : forwardField,
            replace,
            exceptRare
        );
    }

    @Override
    public boolean equals(Object obj) {
        if (super.equals(obj) == false) {
            return false;
        }
        Bm25RescorerBuilder other = (Bm25RescorerBuilder) obj;
        return Arrays.equals(terms, other.terms)
            && Arrays.equals(boosts, other.boosts)
            && replace == other.replace
            && field.equals(other.field)
            && forwardField.equals(other.forwardField)
            && Objects.equals(exceptRare, other.exceptRare);
    }

    @Override
    public int hashCode() {
        return Objects.hash(super.hashCode(), Arrays.hashCode(terms), Arrays.hashCode(boosts), replace, field, forwardField, exceptRare);
    }
}
