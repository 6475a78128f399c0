/*
 * eqsearch's Elasticsearch plugin: the structural list's first stage, its rare terms chosen in the shard.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import org.apache.lucene.search.MatchNoDocsQuery;
import org.apache.lucene.search.Query;
import org.elasticsearch.TransportVersion;
import org.elasticsearch.TransportVersions;
import org.elasticsearch.common.io.stream.StreamInput;
import org.elasticsearch.common.io.stream.StreamOutput;
import org.elasticsearch.index.mapper.MappedFieldType;
import org.elasticsearch.index.query.AbstractQueryBuilder;
import org.elasticsearch.index.query.QueryBuilder;
import org.elasticsearch.index.query.QueryRewriteContext;
import org.elasticsearch.index.query.SearchExecutionContext;
import org.elasticsearch.xcontent.ObjectParser;
import org.elasticsearch.xcontent.ParseField;
import org.elasticsearch.xcontent.ToXContent;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

/**
 * {@code {"eqsearch_terms": {"terms": [...], "boosts": [...], "rare": {"max_share": 0.05, "min_matches": 300,
 * "at_least": 8}}}}: the BM25 of a formula's structural terms (each once, its count in the query as its boost), as the
 * {@code bool} of {@code should} {@code term} clauses eqsearch sends without the plugin, to the same Lucene query; with
 * {@code rare}, of those of them the shard finds rare ({@link RareTerms}), so that the client no longer asks for the
 * terms' document frequencies ({@code _termvectors}) before it searches, and the request carries each term once in a
 * few bytes instead of a clause. The choice is made when Lucene rewrites the query ({@link RareTermsQuery}), from the
 * searcher's own statistics; the {@code eqsearch_bm25} rescorer with the same {@code rare} adds the other terms' BM25.
 *
 * <p>With {@code "top": N} the shard scores the query term at a time ({@link TermAtATime}) and it matches
 * its best N documents only, with their scores: the same hits as without it for a search that reads at most N of them
 * (its {@code size} and rescore windows) and filters out none of them afterwards.
 * Where the many clauses of a long formula keep Lucene's MaxScore from skipping documents, this reads each clause's
 * postings once instead of merging them document by document. With {@code "filter": {...}} (any query, with
 * {@code top} only) the N are the best of the documents it matches, so a filtered search may use {@code top} too.
 *
 * <p>Checked here, where the request is read: a hostile body gets a 400 that names the field: 1 to
 * {@link Bm25RescorerBuilder#MAX_TERMS} distinct terms of 1 to {@link Bm25RescorerBuilder#MAX_TERM_LENGTH} characters,
 * one finite boost in (0, {@link Bm25RescorerBuilder#MAX_BOOST}] per term, a text field, the rule's bounds, a
 * {@code top} of 1 to {@link #MAX_TOP}.
 */
public final class TermsQueryBuilder extends AbstractQueryBuilder<TermsQueryBuilder> {
    public static final String NAME = "eqsearch_terms";
    /** The most documents {@code top} may ask for: Elasticsearch's default {@code index.max_result_window}. */
    public static final int MAX_TOP = 10_000;

    private static final ParseField TERMS = new ParseField("terms");
    private static final ParseField BOOSTS = new ParseField("boosts");
    private static final ParseField FIELD = new ParseField("field");
    private static final ParseField RARE = new ParseField(RareTerms.NAME);
    private static final ParseField TOP = new ParseField("top");
    private static final ParseField FILTER = new ParseField("filter");

    private static final class Parsed {
        List<String> terms;
        List<Float> boosts;
        String field = Bm25RescorerBuilder.DEFAULT_FIELD;
        RareTerms rare;
        int top;
        QueryBuilder filter;
        float boost = DEFAULT_BOOST;
        String queryName;
    }

    private static final ObjectParser<Parsed, Void> PARSER = new ObjectParser<>(NAME, Parsed::new);
    static {
        PARSER.declareStringArray((p, v) -> p.terms = v, TERMS);
        PARSER.declareFloatArray((p, v) -> p.boosts = v, BOOSTS);
        PARSER.declareString((p, v) -> p.field = v, FIELD);
        PARSER.declareObject((p, v) -> p.rare = v, (parser, c) -> RareTerms.PARSER.parse(parser, null), RARE);
        PARSER.declareInt((p, v) -> p.top = v, TOP);
        PARSER.declareObject((p, v) -> p.filter = v, (parser, c) -> parseInnerQueryBuilder(parser), FILTER);
        PARSER.declareFloat((p, v) -> p.boost = v, BOOST_FIELD);
        PARSER.declareString((p, v) -> p.queryName = v, NAME_FIELD);
    }

    private final String[] terms;
    private final float[] boosts;
    private final String field;
    private final RareTerms rare;
    private final int top;
    private final QueryBuilder filter;

    /**
     * {@code top} 0: the {@code BooleanQuery}; 1 to {@link #MAX_TOP}: its best {@code top} hits, term at a time, among
     * the documents {@code filter} matches (null: all; only with {@code top}).
     */
    public TermsQueryBuilder(String[] terms, float[] boosts, String field, RareTerms rare, int top, QueryBuilder filter) {
        Bm25RescorerBuilder.check(NAME, terms, boosts, field);
        if (top < 0 || top > MAX_TOP) {
            throw new IllegalArgumentException("[" + NAME + "] [top] must be 1 to " + MAX_TOP + " (or absent), got " + top);
        }
        if (filter != null && top == 0) {
            throw new IllegalArgumentException(
                "[" + NAME + "] [filter] needs [top]; without [top], put the filter beside this query in a [bool]"
            );
        }
        this.filter = filter;
        this.terms = terms;
        this.boosts = boosts;
        this.field = field;
        this.rare = rare;
        this.top = top;
    }

    /** Reads the request as {@link #doWriteTo} wrote it: one form between nodes, since every node runs one version. */
    public TermsQueryBuilder(StreamInput in) throws IOException {
        super(in);
        terms = in.readStringArray();
        boosts = in.readFloatArray();
        field = in.readString();
        rare = RareTerms.read(in);
        top = in.readVInt();
        filter = in.readOptionalNamedWriteable(QueryBuilder.class);
    }

    public static TermsQueryBuilder fromXContent(XContentParser parser) throws IOException {
        Parsed parsed = PARSER.parse(parser, null);
        if (parsed.terms == null) {
            throw new IllegalArgumentException("[" + NAME + "] needs [terms]");
        }
        String[] terms = parsed.terms.toArray(new String[0]);
        TermsQueryBuilder query = new TermsQueryBuilder(terms, Bm25RescorerBuilder.boosts(NAME, terms, parsed.boosts), parsed.field, parsed.rare, parsed.top, parsed.filter);
        query.boost(parsed.boost);
        query.queryName(parsed.queryName);
        return query;
    }

    @Override
    protected void doWriteTo(StreamOutput out) throws IOException {
        out.writeStringArray(terms);
        out.writeFloatArray(boosts);
        out.writeString(field);
        RareTerms.write(out, rare);
        out.writeVInt(top);
        out.writeOptionalNamedWriteable(filter);
    }

    @Override
    protected void doXContent(XContentBuilder builder, ToXContent.Params params) throws IOException {
        builder.startObject(NAME);
        builder.array(TERMS.getPreferredName(), terms);
        builder.array(BOOSTS.getPreferredName(), boosts);
        builder.field(FIELD.getPreferredName(), field);
        if (rare != null) {
            rare.toXContent(builder, RARE.getPreferredName());
        }
        if (top > 0) {
            builder.field(TOP.getPreferredName(), top);
        }
        if (filter != null) {
            builder.field(FILTER.getPreferredName(), filter);
        }
        boostAndQueryNameToXContent(builder);
        builder.endObject();
    }

    @Override
    protected Query doToQuery(SearchExecutionContext context) throws IOException {
        MappedFieldType type = context.isFieldMapped(field) ? context.getFieldType(field) : null;
        if (type == null) {
            return new MatchNoDocsQuery("[" + NAME + "] field [" + field + "] is not mapped"); // as a term query on it
        }
        if (type.typeName().equals("text") == false || type.isSearchable() == false) {
            throw new IllegalArgumentException(
                "[" + NAME + "] [field] [" + field + "] is a [" + type.typeName() + "] field; it must be an indexed text field"
            );
        }
        return new RareTermsQuery(type.name(), terms, boosts, rare, top, filter == null ? null : filter.toQuery(context));
    }

    @Override
    protected QueryBuilder doRewrite(QueryRewriteContext context) throws IOException {
        QueryBuilder rewritten = filter == null ? null : filter.rewrite(context);
        if (rewritten == filter) {
            return this;
        }
        TermsQueryBuilder query = new TermsQueryBuilder(terms, boosts, field, rare, top, rewritten);
        query.boost(boost);
        query.queryName(queryName);
        return query;
    }

    @Override
    protected boolean doEquals(TermsQueryBuilder other) {
        return Arrays.equals(terms, other.terms)
            && Arrays.equals(boosts, other.boosts)
            && field.equals(other.field)
            && Objects.equals(rare, other.rare)
            && top == other.top
            && Objects.equals(filter, other.filter);
    }

    @Override
    protected int doHashCode() {
        return Objects.hash(Arrays.hashCode(terms), Arrays.hashCode(boosts), field, rare, top, filter);
    }

    @Override
    public String getWriteableName() {
        return NAME;
    }

    @Override
    public TransportVersion getMinimalSupportedVersion() {
        return TransportVersions.V_8_0_0;
    }
}
