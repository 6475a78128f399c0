/*
 * eqsearch's plugin tests: the term-at-a-time first stage against Lucene's own search of the same disjunction, bit
 * for bit, on seeded random in-memory indices, by every way it reads norms (test_terms_top_norms.py compiles and runs
 * it against the built plugin's jar and lucene-core). Prints one line per case kind and "differ N" at the end.
 */
package org.eqsearch.elasticsearch;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.FieldType;
import org.apache.lucene.document.StringField;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FieldInvertState;
import org.apache.lucene.index.FilterDirectoryReader;
import org.apache.lucene.index.FilterLeafReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.TermStates;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.CollectionStatistics;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TermStatistics;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.search.similarities.Similarity;
import org.apache.lucene.store.ByteBuffersDirectory;

public final class TermAtATimeParity {
    private TermAtATimeParity() {}

    static final String FIELD = "structure";
    static final int VOCABULARY = 400;

    /** Whitespace-separated tokens, enough for an index of made-up terms without lucene-analysis-common. */
    static final class Tokens extends TokenStream {
        private final CharTermAttribute term = addAttribute(CharTermAttribute.class);
        private final String[] tokens;
        private int at;

        Tokens(String text) {
            this.tokens = text.isEmpty() ? new String[0] : text.split(" ");
        }

        @Override
        public boolean incrementToken() {
            if (at == tokens.length) {
                return false;
            }
            clearAttributes();
            term.append(tokens[at++]);
            return true;
        }
    }

    /** BM25, but with norms a byte cannot hold: the field's length times 1,000 (so the norms are read live). */
    static final class WideNorms extends Similarity {
        private final BM25Similarity bm25 = new BM25Similarity();

        @Override
        public long computeNorm(FieldInvertState state) {
            return 1000L * state.getLength();
        }

        @Override
        public SimScorer scorer(float boost, CollectionStatistics collection, TermStatistics... terms) {
            SimScorer inner = bm25.scorer(boost, collection, terms);
            return new SimScorer() {
                @Override
                public float score(float freq, long norm) {
                    return inner.score(freq, 1 + norm / 1000 % 200);
                }
            };
        }
    }

    /** A reader whose segments offer no core cache key (so the norms are read live). */
    static final class Uncached extends FilterDirectoryReader {
        Uncached(DirectoryReader in) throws IOException {
            super(in, new SubReaderWrapper() {
                @Override
                public LeafReader wrap(LeafReader reader) {
                    return new FilterLeafReader(reader) {
                        @Override
                        public CacheHelper getCoreCacheHelper() {
                            return null;
                        }

                        @Override
                        public CacheHelper getReaderCacheHelper() {
                            return null;
                        }
                    };
                }
            });
        }

        @Override
        protected DirectoryReader doWrapDirectoryReader(DirectoryReader in) throws IOException {
            return new Uncached(in);
        }

        @Override
        public CacheHelper getReaderCacheHelper() {
            return null;
        }
    }

    static String text(Random random) {
        int length = 1 + random.nextInt(random.nextInt(10) == 0 ? 120 : 30);
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < length; i++) {
            // skewed: a few common terms, many rare ones, as a formula's structural terms are
            int term = (int) Math.min(VOCABULARY - 1, Math.floor(Math.pow(random.nextDouble(), 3) * VOCABULARY));
            text.append(i == 0 ? "" : " ").append("t").append(term);
        }
        return text.toString();
    }

    static ByteBuffersDirectory index(Random random, Similarity similarity, boolean omitNorms, int docs)
        throws IOException {
        ByteBuffersDirectory directory = new ByteBuffersDirectory();
        IndexWriterConfig config = new IndexWriterConfig(new Analyzer() {
            @Override
            protected TokenStreamComponents createComponents(String name) {
                throw new UnsupportedOperationException("the fields are pre-tokenized");
            }
        }).setSimilarity(similarity).setMaxBufferedDocs(docs / 4 + 1);
        FieldType type = new FieldType(TextField.TYPE_NOT_STORED);
        type.setOmitNorms(omitNorms);
        type.freeze();
        try (IndexWriter writer = new IndexWriter(directory, config)) {
            for (int i = 0; i < docs; i++) {
                Document doc = new Document();
                doc.add(new Field(FIELD, new Tokens(text(random)), type));
                doc.add(new StringField("id", Integer.toString(i), Field.Store.NO));
                doc.add(new StringField("part", i % 3 == 0 ? "a" : "b", Field.Store.NO));
                writer.addDocument(doc);
            }
            for (int i = 0; i < docs; i += 9) { // deleted documents are scored and dropped
                writer.deleteDocuments(new Term("id", Integer.toString(i)));
            }
        }
        return directory;
    }

    /** Compares {@code cases} random queries; returns how many differ from Lucene's hits and scores. */
    static int compare(Random random, IndexSearcher searcher, int cases, boolean filtered) throws IOException {
        int differ = 0;
        for (int c = 0; c < cases; c++) {
            int count = 1 + random.nextInt(60);
            List<TermAtATime.Clause> clauses = new ArrayList<>();
            BooleanQuery.Builder bool = new BooleanQuery.Builder();
            java.util.Set<Integer> seen = new java.util.HashSet<>(); // distinct, as a query's terms are
            for (int i = 0; i < count; i++) {
                int drawn = random.nextInt(VOCABULARY + 20); // some absent from the index
                if (seen.add(drawn) == false) {
                    continue;
                }
                Term term = new Term(FIELD, "t" + drawn);
                float boost = random.nextInt(3) == 0 ? 0.5f + random.nextInt(4) : 1f;
                clauses.add(new TermAtATime.Clause(term, TermStates.build(searcher, term, true), boost));
                Query query = new TermQuery(term);
                bool.add(boost == 1f ? query : new BoostQuery(query, boost), BooleanClause.Occur.SHOULD);
            }
            Query filter = filtered ? new TermQuery(new Term("part", "a")) : null;
            Query lucene = filter == null
                ? bool.build()
                : new BooleanQuery.Builder().add(bool.build(), BooleanClause.Occur.MUST)
                    .add(filter, BooleanClause.Occur.FILTER).build();
            int n = 1 + random.nextInt(random.nextBoolean() ? 20 : 400);
            Query scored = TermAtATime.topDocs(
                searcher, FIELD, clauses.toArray(new TermAtATime.Clause[0]), filter, n, "case " + c
            );
            TopDocs expected = searcher.search(lucene, n);
            TopDocs got = searcher.search(scored, n);
            boolean same = expected.scoreDocs.length == got.scoreDocs.length;
            for (int i = 0; same && i < got.scoreDocs.length; i++) {
                same = expected.scoreDocs[i].doc == got.scoreDocs[i].doc
                    && Float.floatToIntBits(expected.scoreDocs[i].score) == Float.floatToIntBits(got.scoreDocs[i].score);
            }
            differ += same ? 0 : 1;
        }
        return differ;
    }

    public static void main(String[] args) throws IOException {
        Random random = new Random(20261129);
        int differ = 0;
        int cached = SegmentNorms.cached();
        try (ByteBuffersDirectory directory = index(random, new BM25Similarity(), false, 3000)) {
            try (DirectoryReader reader = DirectoryReader.open(directory)) {
                IndexSearcher searcher = new IndexSearcher(reader);
                int segments = reader.leaves().size();
                int kind = compare(random, searcher, 150, false) + compare(random, searcher, 50, true);
                System.out.println("bytes segments " + segments + " held " + (SegmentNorms.cached() - cached)
                    + " differ " + kind);
                differ += kind;
            }
            System.out.println("bytes after close held " + (SegmentNorms.cached() - cached));
            try (DirectoryReader reader = new Uncached(DirectoryReader.open(directory))) {
                int kind = compare(random, new IndexSearcher(reader), 100, false);
                System.out.println("uncached held " + (SegmentNorms.cached() - cached) + " differ " + kind);
                differ += kind;
            }
        }
        try (ByteBuffersDirectory directory = index(random, new WideNorms(), false, 2000);
            DirectoryReader reader = DirectoryReader.open(directory)) {
            IndexSearcher searcher = new IndexSearcher(reader);
            searcher.setSimilarity(new WideNorms());
            int kind = compare(random, searcher, 100, false);
            System.out.println("wide held " + (SegmentNorms.cached() - cached) + " differ " + kind);
            differ += kind;
        }
        try (ByteBuffersDirectory directory = index(random, new BM25Similarity(), true, 2000);
            DirectoryReader reader = DirectoryReader.open(directory)) {
            int kind = compare(random, new IndexSearcher(reader), 100, false);
            System.out.println("no-norms differ " + kind);
            differ += kind;
        }
        System.out.println("differ " + differ);
    }
}
