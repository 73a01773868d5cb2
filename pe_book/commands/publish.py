"""``pe-book publish``: the repository URL and its check, the Colab notebooks of the published book
(:mod:`pe_book.publishing.publish`), and the README's headline (:mod:`pe_book.publishing.headline`).
The profile of the Colab notebooks and of the headline is by default the published book's
(:data:`~pe_book.commands.common.PUBLISHED_PROFILE`)."""
from __future__ import annotations

import os
from pathlib import Path

from pe_book.commands.common import PUBLISHED_PROFILE, checkout_root, installed_repository_url, need_checkout


def configure(parser) -> None:
    from pe_book.publishing.book import BOOK_PROFILES
    from pe_book.experiments.profiles import PROFILES

    sub = parser.add_subparsers(dest="action", required=True)
    colab = sub.add_parser("colab", help="write the Colab notebooks of the chapters (the branch colab's files); "
                                          "their text takes the values of the executed book (make book first)")
    colab.add_argument("--commit", required=True, help="the 40-digit commit the book was built from")
    colab.add_argument("--out", required=True, help="folder to write book/<chapter>.ipynb into")
    colab.add_argument("--profile", default=PUBLISHED_PROFILE, choices=sorted(BOOK_PROFILES),
                       help=f"the published book's profile, its chapters' parameters (default: {PUBLISHED_PROFILE})")
    check = sub.add_parser("check", help="refuse a repository URL that is not the repository being published")
    check.add_argument("--github-repository", help="<owner>/<name> (default: $GITHUB_REPOSITORY)")
    sub.add_parser("url", help="print the repository URL and the book's address")
    readme = sub.add_parser("readme", help="write the README's headline figure and table from a profile's complete results")
    readme.add_argument("--profile", default=PUBLISHED_PROFILE, choices=sorted(PROFILES),
                        help=f"the profile whose committed results are shown (default: {PUBLISHED_PROFILE})")
    readme.add_argument("--results", default="results", help="artifact store folder (default: results/)")
    readme.add_argument("--check", action="store_true",
                        help="write nothing: fail unless the README's headline and figure are what the results give")


def run(args) -> int:
    from pe_book.publishing.publish import check_repository, pages_url, repository_url

    if args.action == "url" and checkout_root() is None:  # an installed copy: the URL its metadata keeps
        url = installed_repository_url()
        print(url)
        print(pages_url(url))
        return 0
    need_checkout(f"pe-book publish {args.action}")
    if args.action == "colab":
        from pe_book.publishing.book import chapter_parameters
        from pe_book.publishing.publish import write_colab_notebooks

        for path in write_colab_notebooks(Path(args.out), args.commit, chapter_parameters(args.profile)):
            print(path)
    elif args.action == "readme":
        from pe_book.chapters.common import open_results
        from pe_book.publishing.headline import check_readme, update_readme

        if args.check:
            stored = open_results(args.profile, args.results)
            check_readme(stored)
            print(f"README.md: the headline is what {stored.store.root} gives")
        else:
            print(update_readme(open_results(args.profile, args.results)))
    elif args.action == "check":
        url = repository_url()
        check_repository(url, args.github_repository or os.environ.get("GITHUB_REPOSITORY"))
        print(f"publishing {url} -> {pages_url(url)}")
    else:
        url = repository_url()
        print(url)
        print(pages_url(url))
    return 0
