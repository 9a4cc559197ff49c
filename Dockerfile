# One image for every role: `clawbus api|worker|beat|flower`.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 CLAWBUS_HOME=/var/lib/clawbus
WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared ./shared
COPY workers ./workers
COPY api ./api
# clawbus/ links the three folders above: they install as clawbus.shared, clawbus.workers, clawbus.api.
COPY clawbus ./clawbus
COPY clients/python ./clients/python
RUN pip install --no-cache-dir ./clients/python . \
    && useradd --system --uid 10001 --home-dir /var/lib/clawbus --create-home clawbus
USER clawbus
EXPOSE 8787 5555
CMD ["clawbus", "api", "--host", "0.0.0.0"]
